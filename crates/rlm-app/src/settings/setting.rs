//! One descriptor per setting, and the value it resolves to with where that value came from.
//!
//! A [`Setting`] says once where a setting may be set: its flag, its environment variable, its
//! key in the configuration files, and its default. [`Setting::resolve`] applies the precedence
//! (flag > environment > files > default) and returns a [`Value`]: the value with its
//! [`Origin`], as cargo's `Value<T>` carries its `Definition`. A [`Map`] is a table of named
//! entries (`[llm.providers.NAME]`, `[llm.prices."MODEL"]`). Every descriptor is listed once in
//! [`super::catalog`]; the files are checked against that list and `rlm config show` prints it
//! through [`Described::show`], which resolves each setting as a command does (without flags).

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::path::PathBuf;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Sources;
use super::check::Warnings;
use super::env::Environment;
use super::files::{LoadedConfig, is_secret_key};
use super::shown::Shown;
use crate::error::input_error;

/// Where a resolved value came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum Origin {
    /// A command-line flag (or a front end's argument of the same name).
    Flag { flag: &'static str },
    /// An environment variable.
    Env { variable: String },
    /// A configuration file (the highest-precedence one that sets it).
    File { path: PathBuf },
    /// Nothing set it.
    Default,
}

/// A resolved value and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Value<T> {
    pub value: T,
    pub origin: Origin,
}

/// A type a setting can have: read from a file as TOML, from the environment as text.
pub trait SettingValue: DeserializeOwned + Serialize {
    /// The value of `variable`; `None` when it is unset or blank, an input error naming it when
    /// it does not parse. By default the text is read as a TOML string would be.
    fn from_env(env: &Environment, variable: &str) -> anyhow::Result<Option<Self>> {
        env.var(variable)
            .map(|text| {
                Self::deserialize(toml::Value::String(text.clone())).map_err(|err| {
                    input_error(format!("{variable}={text}: {}", err.message())).into()
                })
            })
            .transpose()
    }
}

impl SettingValue for String {
    fn from_env(env: &Environment, variable: &str) -> anyhow::Result<Option<Self>> {
        Ok(env.var(variable))
    }
}

impl SettingValue for PathBuf {
    fn from_env(env: &Environment, variable: &str) -> anyhow::Result<Option<Self>> {
        Ok(env.path(variable))
    }
}

impl SettingValue for bool {
    fn from_env(env: &Environment, variable: &str) -> anyhow::Result<Option<Self>> {
        env.switch(variable)
    }
}

macro_rules! numbers {
    ($($number:ty),*) => {$(
        impl SettingValue for $number {
            fn from_env(env: &Environment, variable: &str) -> anyhow::Result<Option<Self>> {
                env.number(variable)
            }
        }
    )*};
}
numbers!(u32, u64, usize, i64, f64);

impl SettingValue for Vec<String> {}
impl SettingValue for rlm_query::Threshold {}
impl SettingValue for super::size::SizeValue {}

/// What a setting resolves to: `T` when it has a default, `Option<T>` when it may be unset.
pub trait Resolved<T>: From<T> {
    fn get(&self) -> Option<&T>;
}

impl<T> Resolved<T> for T {
    fn get(&self) -> Option<&T> {
        Some(self)
    }
}

impl<T> Resolved<T> for Option<T> {
    fn get(&self) -> Option<&T> {
        self.as_ref()
    }
}

/// One setting: its key in the files (dotted: `llm.timeout_secs`), its flag, its environment
/// variable and its default. `R` is `T` for a setting with a default, else `Option<T>`.
#[derive(Debug, Clone, Copy)]
pub struct Setting<T, R = Option<T>> {
    /// The dotted key in the files; for a setting the files cannot set, the name
    /// `rlm config show` gives it.
    pub key: &'static str,
    pub flag: Option<&'static str>,
    pub variable: Option<&'static str>,
    /// Whether the files may set it.
    pub in_files: bool,
    pub default: fn(&Sources) -> R,
    /// What an unset value means, when that is not plain "none".
    pub note: Option<&'static str>,
    kind: PhantomData<fn() -> T>,
}

impl<T> Setting<T> {
    /// A setting that may be unset.
    pub const fn optional(key: &'static str) -> Self {
        Self::new(key, |_| None)
    }
}

impl<T, R> Setting<T, R> {
    /// A setting that falls back to `default`.
    pub const fn new(key: &'static str, default: fn(&Sources) -> R) -> Self {
        Self {
            key,
            flag: None,
            variable: None,
            in_files: true,
            default,
            note: None,
            kind: PhantomData,
        }
    }

    pub const fn flag(mut self, flag: &'static str) -> Self {
        self.flag = Some(flag);
        self
    }

    pub const fn variable(mut self, variable: &'static str) -> Self {
        self.variable = Some(variable);
        self
    }

    pub const fn default(mut self, default: fn(&Sources) -> R) -> Self {
        self.default = default;
        self
    }

    pub const fn note(mut self, note: &'static str) -> Self {
        self.note = Some(note);
        self
    }

    /// Not a file setting: only a flag or the environment sets it.
    pub const fn environment_only(mut self) -> Self {
        self.in_files = false;
        self
    }

    /// Its `[table]` in the files and its name there: `("prompt.rlm", "model")`.
    pub fn table_and_name(&self) -> (&'static str, &'static str) {
        self.key.rsplit_once('.').unwrap_or(("", self.key))
    }

    /// How a message names the place `origin` says set it: `--block-timeout`, `RLM_TIMEOUT`,
    /// `block_timeout in [run]`, `the default run.block_timeout`.
    pub fn named_by(&self, origin: &Origin) -> String {
        match origin {
            Origin::Flag { flag } => (*flag).to_owned(),
            Origin::Env { variable } => variable.clone(),
            Origin::File { .. } => {
                let (table, name) = self.table_and_name();
                format!("{name} in [{table}]")
            }
            Origin::Default => format!("the default {}", self.key),
        }
    }
}

impl<T: SettingValue, R: Resolved<T>> Setting<T, R> {
    /// Flag > environment > files > default. A file value is read only from a section the
    /// files set without problems: a command refuses a section with an unknown key or a value
    /// of the wrong type, as the warning about it said.
    pub fn resolve(&self, flag: Option<T>, sources: &Sources) -> anyhow::Result<Value<R>> {
        let config = if self.in_files {
            let (table, _) = self.table_and_name();
            Some(sources.checked_config(table)?)
        } else {
            None
        };
        self.resolve_in(flag, sources, config)
    }

    /// [`Setting::resolve`] without a flag.
    pub fn read(&self, sources: &Sources) -> anyhow::Result<Value<R>> {
        self.resolve(None, sources)
    }

    /// The value in force without a flag, as `rlm config show` reads it: problems elsewhere in
    /// its section do not hide it.
    pub fn peek(&self, sources: &Sources, config: &LoadedConfig) -> anyhow::Result<Value<R>> {
        self.resolve_in(None, sources, self.in_files.then_some(config))
    }

    fn resolve_in(
        &self,
        flag: Option<T>,
        sources: &Sources,
        config: Option<&LoadedConfig>,
    ) -> anyhow::Result<Value<R>> {
        if let Some(value) = flag {
            debug_assert!(self.flag.is_some(), "{} has no flag", self.key);
            let flag = self.flag.unwrap_or("a flag");
            return Ok(Value {
                value: value.into(),
                origin: Origin::Flag { flag },
            });
        }
        if let Some(variable) = self.variable
            && let Some(value) = T::from_env(sources.env(), variable)?
        {
            let origin = Origin::Env {
                variable: variable.to_owned(),
            };
            return Ok(Value {
                value: value.into(),
                origin,
            });
        }
        if let Some((value, path)) = config.and_then(|config| config.lookup(self.key)) {
            let value = T::deserialize(value.clone()).map_err(|err| {
                input_error(format!(
                    "{}: {}: {}",
                    path.display(),
                    self.key,
                    err.message()
                ))
            })?;
            let origin = Origin::File {
                path: path.to_path_buf(),
            };
            return Ok(Value {
                value: value.into(),
                origin,
            });
        }
        Ok(Value {
            value: (self.default)(sources),
            origin: Origin::Default,
        })
    }

    /// The setting as `rlm config show` prints it: resolved as a command would without a
    /// flag; a value a command would refuse is shown as written, with why.
    pub fn shown(&self, sources: &Sources, config: &LoadedConfig) -> Shown {
        match self.peek(sources, config) {
            Ok(Value { value, origin }) => {
                let value = value.get().map(|value| {
                    // A value no TOML type holds (a u64 over i64::MAX) is shown as text.
                    toml::Value::try_from(value).unwrap_or_else(|_| {
                        toml::Value::String(serde_json::to_string(value).unwrap_or_default())
                    })
                });
                Shown {
                    key: self.key.to_owned(),
                    note: value
                        .is_none()
                        .then_some(self.note)
                        .flatten()
                        .map(str::to_owned),
                    value,
                    origin,
                }
            }
            Err(err) => {
                let written = self.written(sources, self.in_files.then_some(config));
                let (value, origin) = written.map_or((None, Origin::Default), |(value, origin)| {
                    (Some(value), origin)
                });
                Shown {
                    key: self.key.to_owned(),
                    value,
                    origin,
                    note: Some(format!("refused: {err}")),
                }
            }
        }
    }

    /// The highest layer that sets the setting, as written there.
    fn written(
        &self,
        sources: &Sources,
        config: Option<&LoadedConfig>,
    ) -> Option<(toml::Value, Origin)> {
        if let Some(variable) = self.variable
            && let Some(text) = sources.env().var(variable)
        {
            let origin = Origin::Env {
                variable: variable.to_owned(),
            };
            return Some((toml::Value::String(text), origin));
        }
        let (value, path) = config?.lookup(self.key)?;
        let origin = Origin::File {
            path: path.to_path_buf(),
        };
        Some((value.clone(), origin))
    }
}

impl<R: Resolved<PathBuf>> Setting<PathBuf, R> {
    /// Flag > environment > default for a path the files do not set: it never fails and
    /// never reads the files, so a command that needs no configuration does not either.
    pub fn environment_path(&self, flag: Option<PathBuf>, sources: &Sources) -> Value<R> {
        debug_assert!(!self.in_files, "{} is read from the files", self.key);
        if let Some(path) = flag {
            let flag = self.flag.unwrap_or("a flag");
            return Value {
                value: path.into(),
                origin: Origin::Flag { flag },
            };
        }
        if let Some(variable) = self.variable
            && let Some(path) = sources.env().path(variable)
        {
            let origin = Origin::Env {
                variable: variable.to_owned(),
            };
            return Value {
                value: path.into(),
                origin,
            };
        }
        Value {
            value: (self.default)(sources),
            origin: Origin::Default,
        }
    }
}

/// A table of named entries in the files (`[llm.prices."MODEL"]`), each a `V`. The files
/// merge it entry by entry.
#[derive(Debug, Clone, Copy)]
pub struct Map<V> {
    pub key: &'static str,
    /// How `rlm config show` lists it; by default each value the files set.
    pub show: fn(&Sources, &LoadedConfig, &'static str) -> Vec<Shown>,
    kind: PhantomData<fn() -> V>,
}

impl<V> Map<V> {
    pub const fn new(key: &'static str) -> Self {
        Self {
            key,
            show: set_in_files,
            kind: PhantomData,
        }
    }

    pub const fn shown_by(
        mut self,
        show: fn(&Sources, &LoadedConfig, &'static str) -> Vec<Shown>,
    ) -> Self {
        self.show = show;
        self
    }
}

impl<V: DeserializeOwned> Map<V> {
    /// The entries the files set, merged (a section with problems is refused, as for a
    /// [`Setting`]).
    pub fn read(&self, sources: &Sources) -> anyhow::Result<BTreeMap<String, V>> {
        let (table, _) = self.key.rsplit_once('.').unwrap_or(("", self.key));
        let config = sources.checked_config(table)?;
        self.entries(config)
            .into_iter()
            .map(|(name, entry)| Ok((name, entry?)))
            .collect()
    }

    /// Each entry the merged files set, or why it does not read as a `V`.
    pub fn entries(&self, config: &LoadedConfig) -> Vec<(String, anyhow::Result<V>)> {
        let Some((toml::Value::Table(entries), _)) = config.lookup(self.key) else {
            return Vec::new();
        };
        entries
            .iter()
            .map(|(name, value)| {
                let entry = V::deserialize(value.clone()).map_err(|err| {
                    input_error(format!("[{}] {name}: {}", self.key, err.message())).into()
                });
                (name.clone(), entry)
            })
            .collect()
    }
}

/// Each value the files set under `key`, as dotted keys with the file that set it; secrets
/// show as `<set>`.
fn set_in_files(_: &Sources, config: &LoadedConfig, key: &'static str) -> Vec<Shown> {
    /// Each leaf's key parts (a name may hold dots: `gpt-4.1`).
    fn leaves(prefix: &[String], value: &toml::Value, out: &mut Vec<Vec<String>>) {
        match value {
            toml::Value::Table(inner) => {
                for (key, value) in inner {
                    let mut parts = prefix.to_vec();
                    parts.push(key.clone());
                    leaves(&parts, value, out);
                }
            }
            _ => out.push(prefix.to_vec()),
        }
    }
    let mut keys = Vec::new();
    let top: Vec<String> = key.split('.').map(str::to_owned).collect();
    if let Some((value, _)) = config.lookup(key) {
        leaves(&top, value, &mut keys);
    }
    keys.into_iter()
        .filter_map(|parts| {
            let borrowed: Vec<&str> = parts.iter().map(String::as_str).collect();
            let (value, path) = config.lookup_parts(&borrowed)?;
            let last = borrowed.last().copied().unwrap_or_default();
            // A name holding a dot is quoted, as TOML writes it.
            let dotted = borrowed
                .iter()
                .map(|part| {
                    if part.contains('.') {
                        format!("\"{part}\"")
                    } else {
                        (*part).to_owned()
                    }
                })
                .collect::<Vec<_>>()
                .join(".");
            let value = if is_secret_key(last) {
                toml::Value::String("<set>".to_owned())
            } else {
                value.clone()
            };
            Some(Shown {
                key: dotted,
                value: Some(value),
                origin: Origin::File {
                    path: path.to_path_buf(),
                },
                note: None,
            })
        })
        .collect()
}

/// What the catalog needs of every descriptor, whatever its type.
pub trait Described {
    /// The dotted key.
    fn key(&self) -> &'static str;
    fn flag(&self) -> Option<&'static str>;
    fn variable(&self) -> Option<&'static str>;
    fn in_files(&self) -> bool;
    /// What is wrong with `value` written at this key in a file, as `[table] name: why`.
    fn check(&self, value: &toml::Value, warnings: &mut Warnings);
    /// Its lines in `rlm config show`.
    fn show(&self, sources: &Sources, config: &LoadedConfig) -> Vec<Shown>;
    /// Its default, as a file would write it (`None` when it has none or depends on the
    /// machine).
    fn example(&self, sources: &Sources) -> Option<toml::Value>;
}

impl<T: SettingValue, R: Resolved<T>> Described for Setting<T, R> {
    fn key(&self) -> &'static str {
        self.key
    }

    fn flag(&self) -> Option<&'static str> {
        self.flag
    }

    fn variable(&self) -> Option<&'static str> {
        self.variable
    }

    fn in_files(&self) -> bool {
        self.in_files
    }

    fn check(&self, value: &toml::Value, warnings: &mut Warnings) {
        if let Err(err) = T::deserialize(value.clone()) {
            let (table, name) = self.table_and_name();
            warnings.push(table, format!("[{table}] {name}: {}", err.message()));
        }
    }

    fn show(&self, sources: &Sources, config: &LoadedConfig) -> Vec<Shown> {
        vec![self.shown(sources, config)]
    }

    fn example(&self, sources: &Sources) -> Option<toml::Value> {
        let default = (self.default)(sources);
        toml::Value::try_from(default.get()?).ok()
    }
}

impl<V: DeserializeOwned> Described for Map<V> {
    fn key(&self) -> &'static str {
        self.key
    }

    fn flag(&self) -> Option<&'static str> {
        None
    }

    fn variable(&self) -> Option<&'static str> {
        None
    }

    fn in_files(&self) -> bool {
        true
    }

    fn check(&self, value: &toml::Value, warnings: &mut Warnings) {
        let Some(entries) = value.as_table() else {
            warnings.push(
                self.key,
                format!(
                    "[{}]: a table of named entries, not a {}",
                    self.key,
                    value.type_str()
                ),
            );
            return;
        };
        for (name, entry) in entries {
            if let Err(err) = V::deserialize(entry.clone()) {
                warnings.push(
                    self.key,
                    format!("[{}] {name}: {}", self.key, err.message()),
                );
            }
        }
    }

    fn show(&self, sources: &Sources, config: &LoadedConfig) -> Vec<Shown> {
        (self.show)(sources, config, self.key)
    }

    fn example(&self, _: &Sources) -> Option<toml::Value> {
        None
    }
}

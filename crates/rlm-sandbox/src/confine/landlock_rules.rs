//! Landlock: the worker gives up all file-system access, TCP (and, on newer kernels, UDP), and
//! signals or abstract UNIX sockets that reach outside itself.

use landlock::{
    ABI, Access, AccessFs, AccessNet, LandlockStatus, Ruleset, RulesetAttr, RulesetStatus, Scope,
};

/// The newest ABI whose rights are requested. A kernel with an older ABI enforces the subset it
/// knows (best effort); nothing is ever allowed, so asking for more rights only denies more.
const REQUESTED: ABI = ABI::V10;

/// Restricts the calling thread and every process or thread it creates from now on. No rule is
/// added, so every handled right is denied: open, create, execute, connect, bind, ...
///
/// Returns what is enforced, or why Landlock could not be applied.
pub(super) fn restrict() -> Result<String, String> {
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(REQUESTED))
        .and_then(|ruleset| ruleset.handle_access(AccessNet::from_all(REQUESTED)))
        .and_then(|ruleset| ruleset.scope(Scope::from_all(REQUESTED)))
        .and_then(Ruleset::create)
        .and_then(|ruleset| ruleset.restrict_self())
        .map_err(|error| format!("Landlock could not be applied: {error}"))?;
    let abi = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => effective_abi,
        LandlockStatus::NotEnabled => {
            return Err(
                "Landlock is built into this kernel but not enabled (boot option `lsm=`)"
                    .to_owned(),
            );
        }
        LandlockStatus::NotImplemented => {
            return Err(
                "this kernel has no Landlock (it needs Linux 5.13 or later with \
                 CONFIG_SECURITY_LANDLOCK, and a container that allows its system calls)"
                    .to_owned(),
            );
        }
    };
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(format!("Landlock ABI {abi} did not enforce the ruleset"));
    }
    Ok(describe(abi))
}

fn describe(abi: ABI) -> String {
    let mut enforced = vec!["no file system"];
    if abi >= ABI::V4 {
        enforced.push("no TCP bind/connect");
    }
    if abi >= ABI::V6 {
        enforced.push("signals and abstract sockets scoped to the worker");
    }
    format!("Landlock ABI {abi} ({})", enforced.join(", "))
}

//! `rlm store copy SRC DST`: every buffer of one store into another, whichever backends they
//! are, with the chunk options and path each was loaded with, and its vectors.
//!
//! Each batch of buffers is one load into the destination (a transaction there), so an
//! interrupted copy leaves whole buffers; copying again skips what is already there unchanged
//! (same name, text and options) and carries on.

use std::ops::ControlFlow;

use rlm_context::chunk::ChunkOptions;
use serde::Serialize;

use crate::backend::Store;
use crate::error::{Error, Result};
use crate::load::{LoadEvent, Source};
use crate::read::BufferInfo;

/// Buffers per load into the destination.
const BATCH: usize = 64;

/// What a copy did.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct CopyReport {
    /// Buffers written to the destination.
    pub copied: u64,
    /// Buffers the destination already held with the same text and options.
    pub unchanged: u64,
    /// Chunks written.
    pub chunks: u64,
    /// Vectors written.
    pub vectors: u64,
}

impl Store {
    /// Copies every buffer of this store into `destination`, with its chunk options, path and
    /// vectors. `progress` gets the buffers done and their total after each batch; `Break`
    /// stops after the batch in hand. A destination holding vectors of another model is
    /// refused before anything is copied ([`Error::ModelMismatch`]).
    pub fn copy_into(
        &self,
        destination: &mut Store,
        progress: &mut dyn FnMut(u64, u64) -> ControlFlow<()>,
    ) -> Result<CopyReport> {
        let model = self.embedding_model()?;
        if let (Some(model), Some(other)) = (&model, destination.embedding_model()?)
            && model.as_str() != other.as_str()
        {
            return Err(Error::ModelMismatch {
                stored: other.as_str().to_owned(),
                requested: model.as_str().to_owned(),
            });
        }
        let buffers = self.list()?;
        let total = buffers.len() as u64;
        let mut report = CopyReport::default();
        let mut done = 0;
        for batch in buffers.chunks(BATCH) {
            // One load per set of chunk options, in the batch's order.
            let mut keys: Vec<String> = Vec::new();
            let mut groups: Vec<Vec<&BufferInfo>> = Vec::new();
            for buffer in batch {
                let key = self.stored_options(buffer.id)?;
                match keys.iter().position(|seen| *seen == key) {
                    Some(index) => groups[index].push(buffer),
                    None => {
                        keys.push(key);
                        groups.push(vec![buffer]);
                    }
                }
            }
            for (key, group) in keys.iter().zip(groups) {
                self.copy_group(destination, key, &group, model.as_ref(), &mut report)?;
            }
            done += batch.len() as u64;
            if progress(done, total).is_break() {
                break;
            }
        }
        Ok(report)
    }

    fn copy_group(
        &self,
        destination: &mut Store,
        key: &str,
        group: &[&BufferInfo],
        model: Option<&rlm_embed::ModelId>,
        report: &mut CopyReport,
    ) -> Result<()> {
        let options: ChunkOptions = serde_json::from_str(key).unwrap_or_default();
        let mut sources = Vec::with_capacity(group.len());
        for buffer in group {
            sources.push(Source::Stored {
                name: buffer.name.clone(),
                path: buffer.path.clone(),
                text: self.text(buffer)?,
            });
        }
        // The names written, as the load tells them (its report may only count them).
        let mut written = Vec::new();
        let loaded = destination.load(sources, &options, &mut |event| {
            if let LoadEvent::Loaded(buffer) = event {
                written.push(buffer.name.clone());
            }
            ControlFlow::Continue(())
        })?;
        report.unchanged += loaded.totals.unchanged;
        report.copied += loaded.totals.buffers;
        report.chunks += loaded.totals.chunks;
        let Some(model) = model else {
            return Ok(());
        };
        for name in &written {
            let source = self.buffer(name)?;
            let target = destination.buffer(name)?;
            let from: Vec<i64> = self.chunks_of(&source)?.iter().map(|c| c.id).collect();
            let to: Vec<i64> = destination
                .chunks_of(&target)?
                .iter()
                .map(|c| c.id)
                .collect();
            // The same text and options give the same chunks, in the same order.
            let by_seq: std::collections::HashMap<i64, i64> =
                from.iter().copied().zip(to.iter().copied()).collect();
            let vectors: Vec<(i64, Vec<u8>)> = self
                .raw_vectors(&from)?
                .into_iter()
                .filter_map(|(id, bytes)| Some((*by_seq.get(&id)?, bytes)))
                .collect();
            if let Some((_, first)) = vectors.first() {
                let dimension = first.len() / 4;
                destination.put_vectors(model.as_str(), dimension, &vectors)?;
                report.vectors += vectors.len() as u64;
            }
        }
        Ok(())
    }
}

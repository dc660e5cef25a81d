//! Byte forms: one vector as a BLOB, and a whole [`VectorIndex`] as a snapshot.
//!
//! Everything is little-endian. A vector BLOB is its f32 values, `4 x dimension` bytes. An
//! index snapshot is `RLMVIDX1`, dimension (u32), count (u64), model id length (u32) and
//! UTF-8 bytes, then ids (u64 each), scales (f32), int8 rows, f32 rows. Loading a snapshot is
//! a copy with no re-quantization.

use crate::error::{Error, Result};
use crate::manifest::ModelId;
use crate::vector_index::VectorIndex;

const MAGIC: &[u8; 8] = b"RLMVIDX1";

/// Encodes one vector for storage (e.g. a SQLite BLOB): `4 x len` bytes.
pub fn vector_to_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Decodes a vector written by [`vector_to_bytes`], checking it has `dimension` values.
pub fn vector_from_bytes(bytes: &[u8], dimension: usize) -> Result<Vec<f32>> {
    if bytes.len() != dimension * 4 {
        return Err(Error::DimensionMismatch {
            context: "stored vector".to_owned(),
            expected: dimension,
            found: bytes.len() / 4,
        });
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

impl VectorIndex {
    /// Serializes the whole index, e.g. to cache it next to a store.
    pub fn to_bytes(&self) -> Vec<u8> {
        let (dimension, ids, full) = (self.dimension, &self.ids, &self.full);
        let (quantized, scales) = (&self.quantized, &self.scales);
        let model = self.model.as_str().as_bytes();
        let mut out = Vec::with_capacity(
            24 + model.len() + ids.len() * 12 + quantized.len() + full.len() * 4,
        );
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(dimension as u32).to_le_bytes());
        out.extend_from_slice(&(ids.len() as u64).to_le_bytes());
        out.extend_from_slice(&(model.len() as u32).to_le_bytes());
        out.extend_from_slice(model);
        out.extend(ids.iter().flat_map(|id| id.to_le_bytes()));
        out.extend(scales.iter().flat_map(|s| s.to_le_bytes()));
        out.extend(quantized.iter().map(|&q| q as u8));
        out.extend(full.iter().flat_map(|x| x.to_le_bytes()));
        out
    }

    /// Reads an index written by [`to_bytes`](Self::to_bytes); rejects truncated or foreign data.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let mut reader = Reader { bytes, at: 0 };
        if reader.take(8)? != MAGIC {
            return Err(invalid("not an rlm vector index (bad magic)"));
        }
        let dimension = reader.u32()? as usize;
        let count = usize::try_from(reader.u64()?).map_err(|_| invalid("count too large"))?;
        let model_length = reader.u32()? as usize;
        let model = std::str::from_utf8(reader.take(model_length)?)
            .map_err(|_| invalid("model id is not UTF-8"))?;
        if dimension == 0 {
            return Err(invalid("dimension is 0"));
        }
        let cells = count
            .checked_mul(dimension)
            .ok_or_else(|| invalid("size overflows"))?;
        let expected = count
            .checked_mul(12)
            .and_then(|n| n.checked_add(cells.checked_mul(5)?))
            .ok_or_else(|| invalid("size overflows"))?;
        if reader.remaining() != expected {
            return Err(invalid(&format!(
                "{} bytes of vectors, expected {expected} for {count} x {dimension}",
                reader.remaining()
            )));
        }
        let ids = reader
            .take(count * 8)?
            .chunks_exact(8)
            .map(le_u64)
            .collect();
        let scales = reader
            .take(count * 4)?
            .chunks_exact(4)
            .map(le_f32)
            .collect();
        let quantized = reader.take(cells)?.iter().map(|&b| b as i8).collect();
        let full = reader
            .take(cells * 4)?
            .chunks_exact(4)
            .map(le_f32)
            .collect();
        Ok(Self {
            model: ModelId::from_stored(model),
            dimension,
            ids,
            full,
            quantized,
            scales,
        })
    }
}

fn invalid(reason: &str) -> Error {
    Error::InvalidVectors {
        reason: reason.to_owned(),
    }
}

fn le_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

fn le_f32(b: &[u8]) -> f32 {
    f32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, length: usize) -> Result<&'a [u8]> {
        let end = self
            .at
            .checked_add(length)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| invalid("truncated"))?;
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }

    fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64> {
        self.take(8).map(le_u64)
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }
}

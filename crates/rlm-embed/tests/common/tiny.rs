//! A tiny Model2Vec-format model written by the tests, so the loader is tested offline.

use std::io::Write as _;
use std::path::Path;

/// Words of the tiny vocabulary; token id = position. `[UNK]` is id 0.
pub const VOCABULARY: [&str; 6] = ["[UNK]", "hello", "world", "read", "file", "weather"];
pub const DIMENSION: usize = 4;

/// Row `i` of the plain (unquantized) table.
pub fn row(token: usize) -> [f32; DIMENSION] {
    let t = token as f32;
    [1.0 + t, 0.5 * t, -t, 2.0]
}

/// A WordLevel tokenizer with the `Whitespace` pre-tokenizer, whose regex runs on the
/// pure-Rust fancy-regex backend this crate is built with.
pub fn tokenizer_json() -> String {
    let vocab: Vec<String> = VOCABULARY
        .iter()
        .enumerate()
        .map(|(id, word)| format!("\"{word}\": {id}"))
        .collect();
    format!(
        r#"{{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],
        "normalizer":{{"type":"Lowercase"}},"pre_tokenizer":{{"type":"Whitespace"}},
        "post_processor":null,"decoder":null,
        "model":{{"type":"WordLevel","vocab":{{{}}},"unk_token":"[UNK]"}}}}"#,
        vocab.join(",")
    )
}

/// One tensor for [`safetensors_bytes`].
pub struct Tensor<'a> {
    pub name: &'a str,
    pub dtype: &'a str,
    pub shape: Vec<usize>,
    pub data: Vec<u8>,
}

/// Serializes tensors in the safetensors layout (u64 header length, JSON header, data).
pub fn safetensors_bytes(tensors: &[Tensor<'_>]) -> Vec<u8> {
    let mut offset = 0;
    let mut entries = Vec::new();
    for tensor in tensors {
        let end = offset + tensor.data.len();
        entries.push(format!(
            "\"{}\":{{\"dtype\":\"{}\",\"shape\":{:?},\"data_offsets\":[{offset},{end}]}}",
            tensor.name, tensor.dtype, tensor.shape
        ));
        offset = end;
    }
    let mut header = format!("{{{}}}", entries.join(","));
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    for tensor in tensors {
        out.extend_from_slice(&tensor.data);
    }
    out
}

pub fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The plain f32 table of the tiny model.
pub fn plain_table() -> Tensor<'static> {
    let values: Vec<f32> = (0..VOCABULARY.len()).flat_map(row).collect();
    Tensor {
        name: "embeddings",
        dtype: "F32",
        shape: vec![VOCABULARY.len(), DIMENSION],
        data: f32_bytes(&values),
    }
}

/// Writes a model directory with the given tensors.
pub fn write_model(dir: &Path, tensors: &[Tensor<'_>]) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("model.safetensors"), safetensors_bytes(tensors)).unwrap();
    std::fs::write(dir.join("tokenizer.json"), tokenizer_json()).unwrap();
    std::fs::write(dir.join("config.json"), r#"{"normalize": true}"#).unwrap();
}

/// Writes a wheel (zip) holding `files` (name, content) plus a METADATA file.
pub fn write_wheel(path: &Path, package: &str, files: &[(&str, Vec<u8>)]) {
    let file = std::fs::File::create(path).unwrap();
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let metadata = format!("Metadata-Version: 2.1\nName: {package}\nVersion: 0.0.1\n\nreadme\n");
    zip.start_file(format!("{package}-0.0.1.dist-info/METADATA"), options)
        .unwrap();
    zip.write_all(metadata.as_bytes()).unwrap();
    for (name, content) in files {
        zip.start_file(*name, options).unwrap();
        zip.write_all(content).unwrap();
    }
    zip.finish().unwrap();
}

/// Normalizes a vector (test-side reference implementation).
pub fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

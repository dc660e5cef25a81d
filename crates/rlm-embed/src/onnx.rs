//! The dense tier: a MiniLM-class encoder in ONNX, run by onnxruntime (feature `onnx`).

//! Offline text embeddings from models on disk (Model2Vec static, ONNX MiniLM) for rlm.

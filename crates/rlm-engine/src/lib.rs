//! The recursive language model loop and the agentic query pipeline.

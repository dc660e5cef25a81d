//! LLM provider clients (OpenAI-compatible, Anthropic) with retries, limits, usage and record/replay.

//! Evidence-based context assembly: ranked evidence, budgets, prompt.mdctx and ctxplan.json.

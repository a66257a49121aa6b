//! The catalog: precedence, configuration, matching and the prompt's budget.

mod precedence;
mod config;
mod matching;
mod prompt_budget;

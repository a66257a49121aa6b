//! The catalog: precedence, configuration, matching and the prompt's budget.

mod config;
mod matching;
mod precedence;
mod prompt_budget;
mod prompt_for;

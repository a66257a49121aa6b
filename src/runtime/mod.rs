//! The agent runtime: sessions over a catalog, activation of skills for one run, host tools.

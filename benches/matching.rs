//! Matching benchmarks (being written).

fn main() {}

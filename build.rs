//! `SKILLCAT_NO_PIE=1` at build time links the `skillcat` binary as a position-dependent
//! executable (Linux, glibc): the loader then applies none of the 70,000 relative relocations a
//! position-independent one needs at every start — about 300 pages of pointers written, and
//! copied on write, before `main` (0.4 ms of a 1.3 ms start on the project's host; a whole
//! `skillcat run` takes 0.86× the time). It gives up the randomised address of the binary's own
//! code and data (the heap, the stack, the shared libraries and the scripts it runs stay
//! randomised), which is why it is not the default: the binary parses what servers and skills
//! send. `docs/sandbox.md` ("What every start pays") weighs it.

fn main() {
    println!("cargo::rerun-if-env-changed=SKILLCAT_NO_PIE");
    let target = |key: &str| std::env::var(key).unwrap_or_default();
    let no_pie = std::env::var_os("SKILLCAT_NO_PIE").is_some_and(|v| !v.is_empty() && v != "0");
    if no_pie && target("CARGO_CFG_TARGET_OS") == "linux" && target("CARGO_CFG_TARGET_ENV") == "gnu"
    {
        println!("cargo::rustc-link-arg-bin=skillcat=-no-pie");
    }
}

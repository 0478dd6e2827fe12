//! Fault points for crash tests: named places between publishing steps where a test makes
//! the process abort (`VEGDB_FAIL_AT=<name>`), to check what a restart sees. They exist only
//! in builds with the `failpoints` cargo feature (the crash tests enable it); without it
//! `fail_point` does nothing and release binaries carry no way to abort on request.

/// Abort the process here when `VEGDB_FAIL_AT` names this point.
#[cfg(feature = "failpoints")]
pub fn fail_point(name: &str) {
    if std::env::var("VEGDB_FAIL_AT").is_ok_and(|v| v == name) {
        eprintln!("fail point {name}: aborting");
        std::process::abort();
    }
}

/// Without the `failpoints` feature: nothing.
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub fn fail_point(_name: &str) {}

//! How the write side's threads are scheduled against the readers': the OS priority the
//! writer's threads take (`--writer-priority`), and a one-thread pool at that priority for
//! other write-side work.

/// A one-thread pool at the writer's priority for other write-side work that must not compete
/// with readers (parsing large changeset bodies, journalling them).
pub fn background_pool() -> &'static rayon::ThreadPool {
    static POOL: std::sync::OnceLock<rayon::ThreadPool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(|_| "vegdb-write-bg".into())
            .start_handler(|_| lower_priority())
            .build()
            .expect("a one-thread pool starts")
    })
}

/// How the writer's threads are scheduled against the readers'.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum WriterPriority {
    /// Linux SCHED_IDLE: a reader waking up preempts the writer at once and the writer uses
    /// only cores the readers leave idle (under a saturating read load, writes wait).
    #[default]
    Idle,
    /// Niceness 19: readers get most of a contended core, writes still progress.
    Low,
    /// The readers' own priority.
    Normal,
}

static PRIORITY: std::sync::OnceLock<WriterPriority> = std::sync::OnceLock::new();

/// Choose the writer threads' priority (before `Writer::start`; the first call wins). The
/// server sets it from `--writer-priority` (default idle); without a call it is normal.
pub fn set_writer_priority(p: WriterPriority) {
    let _ = PRIORITY.set(p);
}

/// Give the calling thread the writer's scheduling priority.
pub fn lower_priority() {
    use thread_priority::{
        set_thread_priority_and_policy, thread_native_id, NormalThreadSchedulePolicy,
        ThreadPriority, ThreadSchedulePolicy,
    };
    // unset (library use, tests): the readers' own priority
    let (priority, policy) = match PRIORITY.get().copied().unwrap_or(WriterPriority::Normal) {
        WriterPriority::Normal => return,
        #[cfg(target_os = "linux")]
        WriterPriority::Idle => (
            ThreadPriority::Min,
            ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle),
        ),
        _ => (
            ThreadPriority::Min,
            ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Other),
        ),
    };
    if let Err(e) = set_thread_priority_and_policy(thread_native_id(), priority, policy) {
        tracing::warn!(error = ?e, "could not lower the writer's priority");
    }
}

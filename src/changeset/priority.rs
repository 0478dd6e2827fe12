//! How the write side's threads are scheduled against the readers': the OS priority the
//! writer's threads take (`--writer-priority`, one of the writer's options), and a one-thread
//! pool at that priority for other write-side work (each writer has its own).

/// A one-thread pool at `priority` for other write-side work that must not compete with
/// readers (parsing large changeset bodies, journalling them).
pub fn background_pool(priority: WriterPriority) -> std::io::Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .thread_name(|_| "vegdb-write-bg".into())
        .start_handler(move |_| lower_priority(priority))
        .build()
        .map_err(std::io::Error::other)
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

/// Give the calling thread the writer's scheduling priority `priority` (the server's
/// `--writer-priority`, default idle; library use and tests: normal, the readers' own).
pub fn lower_priority(priority: WriterPriority) {
    use thread_priority::{
        set_thread_priority_and_policy, thread_native_id, NormalThreadSchedulePolicy,
        ThreadPriority, ThreadSchedulePolicy,
    };
    let (priority, policy) = match priority {
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

//! How the OS schedules the server's threads (`--scheduling`).
//!
//! A worker thread sleeps in `epoll_wait` when its connections have nothing to read and is
//! woken when a request arrives. Under the normal policy (Linux `SCHED_OTHER`) a woken worker
//! preempts whatever runs on its core, often the client it is about to answer, or the other
//! worker; on a machine with few cores and many connections that is a context switch every
//! couple of requests. Under `SCHED_BATCH` a woken worker does not preempt: it runs when the
//! running thread blocks or its time slice ends, and then finds several requests ready and
//! answers them in one go. The weight (the share of the CPU) is the same as the normal
//! policy's.
//!
//! Measured with `/posisjon` at 8 connections on the 2-core machine: the server's context
//! switches per request go from 0.35 to 0.19 and its CPU per request from 17.4 µs to 14.5 µs
//! (BENCHMARKS.md, "Seventh round"). The cost: when other busy processes share the cores, a
//! request can wait for the running thread's slice (a few milliseconds at most) before it is
//! read. `--scheduling normal` keeps the normal policy.
//!
//! The policy is set on the thread that starts the server, before it starts any other thread,
//! so every thread of the server has it (Linux threads take their creator's policy). The
//! writer's threads still lower themselves to `--writer-priority` (`SCHED_IDLE` by default);
//! an idle-policy thread is preempted by a batch one as by a normal one.

use crate::config::Scheduling;

/// Give the calling thread (and so every thread it starts afterwards) the policy, keeping its
/// niceness. Where the OS has no batch policy, or refuses it, the thread keeps its policy
/// (logged).
pub fn apply(s: Scheduling) {
    match s {
        Scheduling::Normal => {}
        #[cfg(target_os = "linux")]
        Scheduling::Batch => {
            if let Err(e) = batch() {
                tracing::warn!(error = %e, "could not set SCHED_BATCH; the normal policy stays");
            }
        }
        #[cfg(not(target_os = "linux"))]
        Scheduling::Batch => {
            tracing::debug!("--scheduling batch is Linux only; the normal policy stays");
        }
    }
}

/// `SCHED_BATCH` for the calling thread, its niceness unchanged.
#[cfg(target_os = "linux")]
fn batch() -> anyhow::Result<()> {
    use thread_priority::{
        set_thread_priority_and_policy, thread_native_id, NormalThreadSchedulePolicy,
        ThreadPriority, ThreadPriorityValue, ThreadSchedulePolicy,
    };
    // thread_priority sets a normal policy's niceness along with it, from a 0..=99 value; the
    // value that gives back the thread's own niceness is looked for, and the result checked
    let (_, nice) = thread_policy_and_nice()?;
    let value = (0u8..=99)
        .find(|&p| niceness_of(p) == nice)
        .ok_or_else(|| anyhow::anyhow!("no priority value for niceness {nice}"))?;
    let priority = ThreadPriority::Crossplatform(
        ThreadPriorityValue::try_from(value).map_err(|e| anyhow::anyhow!(e))?,
    );
    let policy = ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Batch);
    set_thread_priority_and_policy(thread_native_id(), priority, policy)
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let now = thread_policy_and_nice()?;
    anyhow::ensure!(
        now == (SCHED_BATCH, nice),
        "policy and niceness are {now:?}, not ({SCHED_BATCH}, {nice})"
    );
    Ok(())
}

/// Linux's number of the batch policy (`sched.h`).
#[cfg(target_os = "linux")]
const SCHED_BATCH: i64 = 3;

/// The niceness thread_priority 3 gives a normal-policy thread for a 0..=99 value (lower
/// values are nicer).
#[cfg(target_os = "linux")]
fn niceness_of(p: u8) -> i64 {
    let ratio = 1f32 - f32::from(p) / 99f32;
    i64::from((39f32 * ratio) as i8 - 20)
}

/// The calling thread's scheduling policy and niceness, from `/proc/thread-self/stat`
/// (fields 41 and 19).
#[cfg(target_os = "linux")]
fn thread_policy_and_nice() -> anyhow::Result<(i64, i64)> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat")?;
    policy_and_nice(&stat).ok_or_else(|| anyhow::anyhow!("unreadable /proc/thread-self/stat"))
}

/// Policy (field 41) and niceness (field 19) of a `/proc/.../stat` line. The command name
/// (field 2) is in parentheses and may hold spaces: fields are counted after its last `)`.
#[cfg(target_os = "linux")]
fn policy_and_nice(stat: &str) -> Option<(i64, i64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3
    let field = |n: usize| fields.get(n - 3)?.parse::<i64>().ok();
    Some((field(41)?, field(19)?))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn batch_is_what_the_kernel_then_reports_and_the_niceness_stays() {
        // on a thread of its own: the policy is the thread's, and its children's
        std::thread::spawn(|| {
            let (policy, nice) = thread_policy_and_nice().unwrap();
            assert_eq!(policy, 0, "a test thread starts under SCHED_OTHER");
            apply(Scheduling::Batch);
            assert_eq!(thread_policy_and_nice().unwrap(), (SCHED_BATCH, nice));
            // a thread started afterwards has it too
            let child = std::thread::spawn(|| thread_policy_and_nice().unwrap().0);
            assert_eq!(child.join().unwrap(), SCHED_BATCH);
        })
        .join()
        .unwrap();
        // the test's own thread is untouched
        assert_eq!(thread_policy_and_nice().unwrap().0, 0);
    }

    #[test]
    fn normal_changes_nothing() {
        std::thread::spawn(|| {
            let before = thread_policy_and_nice().unwrap();
            apply(Scheduling::Normal);
            assert_eq!(thread_policy_and_nice().unwrap(), before);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn every_niceness_has_a_value() {
        for nice in -20..=19 {
            assert!((0u8..=99).any(|p| niceness_of(p) == nice), "{nice}");
        }
    }

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let mut fields: Vec<String> = (3..=52).map(|n| n.to_string()).collect();
        fields[19 - 3] = "-5".into();
        fields[41 - 3] = "3".into();
        let line = format!("1234 (a (b) c) {}", fields.join(" "));
        assert_eq!(policy_and_nice(&line), Some((3, -5)));
        assert_eq!(policy_and_nice("1 (x) 1 2"), None);
    }
}

//! Heavy answers rendered off the async workers, a bounded number at a time, so that heavy
//! pages cannot starve cheap requests of the workers.
//!
//! A streamed list page (the stream module's pages, the GeoJSON collections) renders ~64 KiB
//! when hyper asks for the next frame, and the compression layer compresses it in the same
//! call. On the async workers that work delayed every other connection of the worker: 100
//! clients asking for 34 MB gzipped pages made `/status` take 54 s. A handler marks such an
//! answer [`Heavy`]; the request stack then wraps its body, compression included, in
//! [`offload`]: each frame is produced on one of the [`permits`] threads of the server's
//! [`HeavyPool`], so at most `max(1, cores − 1)` chunks are rendered and compressed at once and
//! at least one core stays free for the cheap requests. The threads take the chunks in the
//! order asked (one FIFO queue), one chunk at a time, so the heavy answers take turns chunk by
//! chunk. Backpressure is unchanged: the next chunk is produced only when hyper asks for it, so
//! a client that does not read holds no thread and no permit.
//!
//! The pool is a value, not a process-wide static: whoever builds the server's state gives it
//! (`api::state::ServerResources`), and its threads end once the pool and the last answer
//! rendered on it are dropped. Two servers in one process with a pool each take up to
//! `cores − 1` threads each; a process that runs several (tests) may give them one pool to
//! share.

use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Wake, Waker};

use axum::body::{Body, Bytes};
use http_body::{Body as HttpBody, Frame, SizeHint};

/// A response extension: the body is heavy to produce (render it off the async workers).
#[derive(Debug, Clone, Copy)]
pub struct Heavy;

/// A response extension beside [`Heavy`]: the body is a page of light items (`api::stream`),
/// heavy only when compressed; uncompressed, its chunks are rendered on the async worker
/// like any answer, without a hand-off to the pool per chunk.
#[derive(Debug, Clone, Copy)]
pub struct Light;

/// How many heavy chunks are produced at once: one less than the CPUs, at least one.
pub fn permits() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .saturating_sub(1)
        .max(1)
}

/// One chunk to produce on a heavy-work thread.
type Job = Box<dyn FnOnce() + Send>;

/// The heavy-work threads of one server: [`permits`] threads started at first use, each taking
/// the oldest chunk. A fixed set of threads (not the blocking pool, which starts a thread for
/// nearly every chunk when chunks follow each other closely) keeps the allocator's per-thread
/// caches to those few threads: with a thread per waiting answer, 40 clients that did not read
/// held 8 MB each. Dropping the pool (and every answer that holds it) closes its queue, and its
/// threads return.
pub struct HeavyPool {
    threads: usize,
    queue: OnceLock<Mutex<SyncSender<Job>>>,
}

impl std::fmt::Debug for HeavyPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeavyPool")
            .field("threads", &self.threads)
            .field("started", &self.queue.get().is_some())
            .finish()
    }
}

impl Default for HeavyPool {
    fn default() -> Self {
        HeavyPool::new(permits())
    }
}

impl HeavyPool {
    /// A pool of `threads` threads (at least one), started when the first chunk comes.
    pub fn new(threads: usize) -> HeavyPool {
        HeavyPool {
            threads: threads.max(1),
            queue: OnceLock::new(),
        }
    }

    /// The pool's queue, its threads started on first use.
    fn sender(&self) -> SyncSender<Job> {
        let queue = self.queue.get_or_init(|| {
            // room for one waiting chunk per connection the server lets in is not needed: a
            // full queue makes the sender wait on a blocking thread (see `produce`)
            let (tx, rx) = sync_channel::<Job>(1024);
            let rx = Arc::new(Mutex::new(rx));
            for i in 0..self.threads {
                let rx = rx.clone();
                let spawned = std::thread::Builder::new()
                    .name(format!("vegdb-heavy-{i}"))
                    .spawn(move || loop {
                        let job = match rx.lock() {
                            Ok(rx) => rx.recv(),
                            Err(poisoned) => poisoned.into_inner().recv(),
                        };
                        // the pool is gone: every sender dropped
                        let Ok(job) = job else { return };
                        // a panicking chunk ends its answer (its sender is dropped), not the
                        // thread
                        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                    });
                if let Err(e) = spawned {
                    tracing::error!(error = %e, "starting a heavy-work thread failed");
                }
            }
            Mutex::new(tx)
        });
        match queue.lock() {
            Ok(q) => q.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

type Produced = (Body, Option<Result<Frame<Bytes>, axum::Error>>);

/// `body` produced frame by frame on the threads of `pool`, oldest chunk first (the answer
/// holds the pool until its last frame).
pub fn offload(pool: &Arc<HeavyPool>, body: Body) -> Body {
    let hint = body.size_hint();
    Body::new(Offloaded {
        pool: pool.clone(),
        body: Some(body),
        job: None,
        hint,
        done: false,
    })
}

struct Offloaded {
    pool: Arc<HeavyPool>,
    /// The body, while no frame is being produced.
    body: Option<Body>,
    /// The frame being produced (it owns the body meanwhile).
    job: Option<Pin<Box<dyn Future<Output = Produced> + Send>>>,
    hint: SizeHint,
    done: bool,
}

fn failed(why: &str) -> Produced {
    tracing::error!("rendering a heavy answer failed: {why}");
    (
        Body::empty(),
        Some(Err(axum::Error::new(std::io::Error::other(
            why.to_string(),
        )))),
    )
}

/// The next frame of `body`, made on a thread of `pool`.
async fn produce(pool: Arc<HeavyPool>, body: Body) -> Produced {
    let (done, made) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let mut body = body;
        let frame = block_on(std::future::poll_fn(|cx| {
            Pin::new(&mut body).poll_frame(cx)
        }));
        let _ = done.send((body, frame));
    });
    let sender = pool.sender();
    drop(pool);
    let queued = match sender.try_send(job) {
        Ok(()) => true,
        // more chunks waiting than the queue holds: wait for room off the async workers
        Err(TrySendError::Full(job)) => {
            tokio::task::spawn_blocking(move || sender.send(job).is_ok())
                .await
                .unwrap_or(false)
        }
        Err(TrySendError::Disconnected(_)) => false,
    };
    if !queued {
        return failed("no heavy-work thread");
    }
    match made.await {
        Ok(produced) => produced,
        Err(_) => failed("the chunk's rendering panicked"),
    }
}

impl HttpBody for Offloaded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        if this.job.is_none() {
            let Some(body) = this.body.take() else {
                return Poll::Ready(None);
            };
            if body.is_end_stream() {
                this.done = true;
                return Poll::Ready(None);
            }
            this.job = Some(Box::pin(produce(this.pool.clone(), body)));
        }
        let Some(job) = this.job.as_mut() else {
            return Poll::Ready(None);
        };
        let (body, frame) = std::task::ready!(job.as_mut().poll(cx));
        this.job = None;
        match frame {
            None | Some(Err(_)) => this.done = true,
            Some(Ok(_)) => this.body = Some(body),
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }

    fn size_hint(&self) -> SizeHint {
        self.hint
    }
}

/// Wakes the thread that waits in [`block_on`].
struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Run `fut` to completion on this (blocking-pool) thread. The bodies offloaded here produce
/// their frames synchronously, so this normally returns after one poll; a body that waits is
/// woken through the thread's park token.
fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A body of `n` frames that records how many of its frames are being produced at once.
    struct Counting {
        left: usize,
        now: Arc<AtomicUsize>,
        most: Arc<AtomicUsize>,
    }

    impl HttpBody for Counting {
        type Data = Bytes;
        type Error = axum::Error;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
            if self.left == 0 {
                return Poll::Ready(None);
            }
            self.left -= 1;
            let at_once = self.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(at_once, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(5));
            self.now.fetch_sub(1, Ordering::SeqCst);
            Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"abc")))))
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn frames_come_in_order_and_at_most_permits_at_once() {
        let now = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let pool = Arc::new(HeavyPool::default());
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let body = offload(
                &pool,
                Body::new(Counting {
                    left: 10,
                    now: now.clone(),
                    most: most.clone(),
                }),
            );
            tasks.push(tokio::spawn(async move {
                body.collect().await.unwrap().to_bytes()
            }));
        }
        for t in tasks {
            assert_eq!(t.await.unwrap(), "abc".repeat(10));
        }
        let most = most.load(Ordering::SeqCst);
        assert!(most >= 1 && most <= permits(), "{most} at once");
    }

    #[tokio::test]
    async fn an_empty_body_ends_at_once() {
        let body = offload(&Arc::new(HeavyPool::default()), Body::empty());
        assert!(body.collect().await.unwrap().to_bytes().is_empty());
    }

    /// A body of one frame that says which thread (its task directory under `/proc/self`)
    /// produced it.
    struct Where(Option<std::path::PathBuf>);

    impl HttpBody for Where {
        type Data = Bytes;
        type Error = axum::Error;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
            if self.0.is_some() {
                return Poll::Ready(None);
            }
            // `/proc/thread-self` is `<pid>/task/<tid>` of the calling thread
            let task = std::fs::read_link("/proc/thread-self").unwrap();
            self.0 = Some(task.clone());
            let task = task.to_string_lossy().into_owned();
            Poll::Ready(Some(Ok(Frame::data(Bytes::from(task)))))
        }
    }

    #[tokio::test]
    async fn a_dropped_pool_ends_its_threads_and_another_pool_is_its_own() {
        let first = Arc::new(HeavyPool::new(1));
        let second = Arc::new(HeavyPool::new(1));
        let run = |pool: &Arc<HeavyPool>| {
            let body = offload(pool, Body::new(Where(None)));
            async move {
                let task = body.collect().await.unwrap().to_bytes();
                std::path::Path::new("/proc").join(std::str::from_utf8(&task).unwrap())
            }
        };
        let (a, b) = (run(&first).await, run(&second).await);
        assert_ne!(a, b, "two pools rendered on one thread");
        let name = std::fs::read_to_string(a.join("comm")).unwrap();
        assert_eq!(name.trim(), "vegdb-heavy-0");
        assert!(a.exists() && b.exists());
        drop(first);
        let ended = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while a.exists() && std::time::Instant::now() < ended {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(!a.exists(), "the dropped pool's thread still runs");
        // the other pool still renders, on its own thread
        assert!(b.exists());
        assert_eq!(run(&second).await, b);
    }
}

//! A value that is either there from the start or made on first use: the parts of a day's view
//! of a generation (`generation::time`) that a request may never touch. A ready value is read
//! with a plain match (no atomic load), so the tables and indexes of a loaded generation cost
//! nothing more to reach than a field.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::OnceLock;

/// Makes a [`Lazy`]'s value on first use.
pub type Maker<T> = Box<dyn Fn() -> T + Send + Sync>;

/// A value there from the start ([`Lazy::ready`]) or made by a maker on first use
/// ([`Lazy::later`]); either way read through `Deref`. Concurrent first uses wait for one
/// making.
pub enum Lazy<T> {
    Ready(T),
    Later { cell: OnceLock<T>, make: Maker<T> },
}

impl<T> Lazy<T> {
    pub fn ready(value: T) -> Lazy<T> {
        Lazy::Ready(value)
    }

    pub fn later(make: impl Fn() -> T + Send + Sync + 'static) -> Lazy<T> {
        Lazy::Later {
            cell: OnceLock::new(),
            make: Box::new(make),
        }
    }

    /// Whether the value exists already (ready, or made).
    pub fn is_made(&self) -> bool {
        match self {
            Lazy::Ready(_) => true,
            Lazy::Later { cell, .. } => cell.get().is_some(),
        }
    }
}

impl<T> Deref for Lazy<T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        match self {
            Lazy::Ready(v) => v,
            Lazy::Later { cell, make } => cell.get_or_init(make),
        }
    }
}

impl<T> DerefMut for Lazy<T> {
    fn deref_mut(&mut self) -> &mut T {
        match self {
            Lazy::Ready(v) => v,
            Lazy::Later { cell, make } => {
                if cell.get().is_none() {
                    let _ = cell.set(make());
                }
                match cell.get_mut() {
                    Some(v) => v,
                    None => unreachable!("the cell was set just above"),
                }
            }
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Lazy<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lazy::Ready(v) => v.fmt(f),
            Lazy::Later { cell, .. } => match cell.get() {
                Some(v) => v.fmt(f),
                None => f.write_str("<not made yet>"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn a_later_value_is_made_once_on_first_use() {
        let made = Arc::new(AtomicUsize::new(0));
        let m = made.clone();
        let lazy = Lazy::later(move || {
            m.fetch_add(1, Ordering::SeqCst);
            vec![1, 2, 3]
        });
        assert!(!lazy.is_made());
        assert_eq!(made.load(Ordering::SeqCst), 0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| assert_eq!(lazy.len(), 3));
            }
        });
        assert!(lazy.is_made());
        assert_eq!(made.load(Ordering::SeqCst), 1);
        assert!(Lazy::ready(5).is_made());
        assert_eq!(*Lazy::ready(5), 5);
    }
}

//! Running a command's sessions: each as a thread, or in fiber mode ('lightweight pooling') as
//! fibers of one thread per online scheduler ([`engine::fiber::run`]). Used by `bench insert`
//! and by `crash-load`, the SIGKILL tests' child.

use engine::instance::Instance;
use std::sync::{Arc, Mutex};

/// Runs each session's body as a thread, or as a fiber of its scheduler's thread when `fibers`;
/// returns when all are done, with the first session error, if any.
pub fn run<F>(instance: &Instance, sessions: Vec<F>, fibers: bool) -> Result<(), String>
where
    F: FnOnce() -> Result<(), String> + Send + 'static,
{
    if !fibers {
        let threads: Vec<_> = sessions.into_iter().map(std::thread::spawn).collect();
        let mut outcomes = Vec::new();
        for thread in threads {
            outcomes.push(thread.join().map_err(|_| "a session panicked".to_string())?);
        }
        return outcomes.into_iter().collect();
    }
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let jobs: Vec<Box<dyn FnOnce() + Send>> = sessions
        .into_iter()
        .map(|session| {
            let outcomes = outcomes.clone();
            Box::new(move || {
                let outcome = session();
                outcomes.lock().expect("no session panics holding it").push(outcome);
            }) as Box<dyn FnOnce() + Send>
        })
        .collect();
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        engine::fiber::run(&instance.schedulers, jobs)
    }));
    ran.map_err(|_| "a session panicked".to_string())?;
    let outcomes = std::mem::take(&mut *outcomes.lock().expect("the fibers are done"));
    outcomes.into_iter().collect()
}

//! Thread priorities: work nobody waits for yields the CPU and the disk to the agent's own
//! commands.

const IOPRIO_CLASS_SHIFT: libc::c_int = 13;
const IOPRIO_CLASS_IDLE: libc::c_int = 3;
const IOPRIO_WHO_PROCESS: libc::c_int = 1;

/// Idle CPU (`SCHED_IDLE`, else nice 19) and idle I/O priority for the calling thread, and
/// so for the threads it starts: the verification pass's walk, and the helpers of a batch
/// nobody waits for (`feed::map_parallel_at_idle`). Best effort: a kernel that refuses leaves it as it was. An
/// unprivileged thread cannot raise its priority again, so this is only ever called on a
/// thread that ends with its work.
pub fn lower_own_priority() {
    let idle = set_sched_idle();
    if !idle {
        // SAFETY: setpriority on the calling thread (0) only changes its nice value.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
    }
    // SAFETY: ioprio_set(IOPRIO_WHO_PROCESS, 0 = the calling thread, IDLE) takes plain ints.
    let io = unsafe {
        libc::syscall(
            libc::SYS_ioprio_set,
            IOPRIO_WHO_PROCESS,
            0,
            IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT,
        )
    };
    if !idle || io != 0 {
        tracing::debug!(
            sched_idle = idle,
            io_idle = io == 0,
            "thread priority only partly lowered"
        );
    }
}

/// `SCHED_IDLE` for the calling thread. Its `sched_param` is read from the kernel first rather
/// than written as a struct literal: musl's has fields glibc's lacks.
fn set_sched_idle() -> bool {
    let mut param = std::mem::MaybeUninit::<libc::sched_param>::uninit();
    // SAFETY: pid 0 is the calling thread; sched_getparam fills the struct it is given.
    if unsafe { libc::sched_getparam(0, param.as_mut_ptr()) } != 0 {
        return false;
    }
    // SAFETY: sched_getparam returned 0, so it wrote the whole struct.
    let mut param = unsafe { param.assume_init() };
    param.sched_priority = 0;
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param for SCHED_IDLE.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) == 0 }
}

/// The lowest CPU priority of the normal class (nice 19) for the calling thread, and so for the
/// threads it starts: for work that holds a resource while it runs (a read snapshot of the
/// index), which an idle class could starve for as long as the machine is busy. Best effort.
pub fn nice_own_thread() {
    // SAFETY: setpriority on the calling thread (0) only changes its nice value.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) } != 0 {
        tracing::debug!("thread priority not lowered");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scheduler_and_io_class() -> (libc::c_int, libc::c_long) {
        // SAFETY: both only read the calling thread's own scheduling state.
        unsafe {
            let policy = libc::sched_getscheduler(0);
            let io = libc::syscall(libc::SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0);
            (policy, io >> IOPRIO_CLASS_SHIFT)
        }
    }

    #[test]
    fn a_lowered_thread_and_the_threads_it_starts_run_at_idle_cpu_and_io_priority() {
        let (policy, io_class) = std::thread::spawn(|| {
            lower_own_priority();
            // Threads started from the lowered one inherit it.
            std::thread::spawn(scheduler_and_io_class)
                .join()
                .expect("inner thread")
        })
        .join()
        .expect("lowered thread");
        assert_eq!(policy, libc::SCHED_IDLE);
        assert_eq!(io_class, libc::c_long::from(IOPRIO_CLASS_IDLE));
        // The thread that started it is untouched.
        assert_ne!(scheduler_and_io_class().0, libc::SCHED_IDLE);
    }
}

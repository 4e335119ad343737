//! SQLite's errors told as what they are (G12): an I/O error names the step SQLite failed at
//! (its extended code), and the daemon's log carries SQLite's own error log, which names the
//! system call, the file and the `errno` ("os_unix.c:…: (5) ftruncate(…/index.sqlite-shm) -
//! Input/output error"). Without it a fault under the index reads "disk I/O error", whatever
//! failed.

use std::ffi::c_int;
use std::sync::Once;

use rusqlite::ffi;

/// SQLite's words for `err`; for an I/O error, with the step that failed and its extended code.
pub fn describe(err: &rusqlite::Error) -> String {
    let rusqlite::Error::SqliteFailure(failure, message) = err else {
        return err.to_string();
    };
    let words = message
        .clone()
        .unwrap_or_else(|| ffi::code_to_str(failure.extended_code).to_string());
    match io_step(failure.extended_code) {
        Some(step) => format!("{words} while {step} (SQLite code {})", failure.extended_code),
        None => words,
    }
}

/// What SQLite was doing when it met an I/O error with this extended code.
fn io_step(extended: c_int) -> Option<&'static str> {
    Some(match extended {
        ffi::SQLITE_IOERR_READ | ffi::SQLITE_IOERR_SHORT_READ => "reading a file of the index",
        ffi::SQLITE_IOERR_WRITE => "writing a file of the index",
        ffi::SQLITE_IOERR_FSYNC => "syncing a file of the index to disk",
        ffi::SQLITE_IOERR_DIR_FSYNC => "syncing the state directory to disk",
        ffi::SQLITE_IOERR_TRUNCATE => "truncating a file of the index",
        ffi::SQLITE_IOERR_FSTAT => "reading the attributes of a file of the index",
        ffi::SQLITE_IOERR_LOCK
        | ffi::SQLITE_IOERR_RDLOCK
        | ffi::SQLITE_IOERR_UNLOCK
        | ffi::SQLITE_IOERR_CHECKRESERVEDLOCK => "locking the index",
        ffi::SQLITE_IOERR_DELETE => "deleting a journal of the index",
        ffi::SQLITE_IOERR_ACCESS => "checking whether a file of the index exists",
        ffi::SQLITE_IOERR_CLOSE => "closing a file of the index",
        ffi::SQLITE_IOERR_SHMOPEN => "opening the index's shared-memory file (-shm)",
        ffi::SQLITE_IOERR_SHMSIZE => "growing the index's shared-memory file (-shm)",
        ffi::SQLITE_IOERR_SHMMAP => "mapping the index's shared-memory file (-shm)",
        ffi::SQLITE_IOERR_SHMLOCK => "locking the index's shared-memory file (-shm)",
        ffi::SQLITE_IOERR_SEEK => "seeking in a file of the index",
        ffi::SQLITE_IOERR_MMAP => "mapping the index into memory",
        _ => return None,
    })
}

/// Sends SQLite's error log to this process's log, once, before any connection is opened (SQLite
/// takes it only before it initialises). A fault (I/O, full, damaged, cannot open) is a warning;
/// a notice (a write-ahead log recovered at start) is info; the rest (a constraint the code
/// expects, a busy wait) is debug. Only the daemon does this: a command's own reads stay quiet.
pub fn log_to_tracing() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: called once (`Once`), first thing in `serve`, before this process makes any
        // other SQLite call; `log` makes no SQLite call and `tracing` is thread-safe.
        if let Err(err) = unsafe { rusqlite::trace::config_log(Some(log)) } {
            tracing::debug!("SQLite's error log stays off: {err}");
        }
    });
}

fn log(code: c_int, message: &str) {
    let message = with_errno_words(message);
    match code & 0xff {
        ffi::SQLITE_IOERR
        | ffi::SQLITE_CORRUPT
        | ffi::SQLITE_FULL
        | ffi::SQLITE_CANTOPEN
        | ffi::SQLITE_NOTADB
        | ffi::SQLITE_PROTOCOL
        | ffi::SQLITE_NOMEM
        | ffi::SQLITE_MISUSE => tracing::warn!("SQLite: {message}"),
        ffi::SQLITE_NOTICE => tracing::info!("SQLite: {message}"),
        _ => tracing::debug!("SQLite ({code}): {message}"),
    }
}

/// SQLite's log of a failed system call, "os_unix.c:LINE: (ERRNO) CALL(PATH) - ", with the
/// system's words for ERRNO after the dash (SQLite leaves them out in a thread-safe build).
fn with_errno_words(message: &str) -> String {
    let errno = message
        .strip_suffix(" - ")
        .and_then(|m| m.split_once(": ("))
        .and_then(|(_, rest)| rest.split_once(')'))
        .and_then(|(n, _)| n.parse::<i32>().ok());
    match errno {
        Some(n) => format!("{message}{}", std::io::Error::from_raw_os_error(n)),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(extended: c_int, message: Option<&str>) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(ffi::Error::new(extended), message.map(str::to_string))
    }

    #[test]
    fn an_io_error_names_its_step_and_code() {
        let err = failure(ffi::SQLITE_IOERR_SHMOPEN, Some("disk I/O error"));
        assert_eq!(
            describe(&err),
            "disk I/O error while opening the index's shared-memory file (-shm) (SQLite code 4618)"
        );
        let err = failure(ffi::SQLITE_IOERR_FSYNC, None);
        assert_eq!(
            describe(&err),
            "disk I/O error while syncing a file of the index to disk (SQLite code 1034)"
        );
    }

    #[test]
    fn a_failed_system_call_gets_the_systems_words() {
        let logged = "os_unix.c:45557: (5) ftruncate(/s/index.sqlite-shm) - ";
        assert_eq!(
            with_errno_words(logged),
            format!("{logged}{}", std::io::Error::from_raw_os_error(5))
        );
        let statement = "statement aborts at 2: disk I/O error; [PRAGMA user_version]";
        assert_eq!(with_errno_words(statement), statement);
    }

    #[test]
    fn other_errors_are_sqlites_words() {
        let err = failure(
            ffi::SQLITE_CONSTRAINT_UNIQUE,
            Some("UNIQUE constraint failed: t.a"),
        );
        assert_eq!(describe(&err), "UNIQUE constraint failed: t.a");
        assert_eq!(
            describe(&failure(ffi::SQLITE_FULL, None)),
            "database or disk is full"
        );
    }
}

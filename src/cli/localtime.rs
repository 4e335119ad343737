//! Times as a person reads and types them: shown in local time with its UTC offset
//! (`2026-12-01 13:23:39+01:00`, which pastes back as it is), and a time typed without an
//! offset taken as local time, as `date` and `git log --since` take it. The daemon only ever
//! sees UTC (RFC 3339 with `Z`).

use crate::model::{format_time, parse_time};

/// The local UTC offset (minutes east) at `ms` since the epoch, `None` when the C library
/// cannot tell.
#[cfg(unix)]
fn local_offset_minutes(ms: i64) -> Option<i64> {
    // The libc crate deprecates its musl time_t alias (musl's is 64-bit since 1.2.0; the crate
    // will follow): the static release build's only warning.
    #[allow(deprecated)]
    let secs = ms.div_euclid(1000) as libc::time_t;
    // SAFETY: an all-zero `tm` is a valid value of this plain C struct.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: localtime_r reads `secs` and writes `tm`, both alive for the call; it is the
    // thread-safe form.
    if unsafe { libc::localtime_r(&secs, &mut tm) }.is_null() {
        return None;
    }
    Some(tm.tm_gmtoff / 60)
}

/// Windows: the time at `ms` turned into local time by the zone's rules for that date
/// (`SystemTimeToTzSpecificLocalTime`), less the time itself.
#[cfg(windows)]
fn local_offset_minutes(ms: i64) -> Option<i64> {
    use windows_sys::Win32::Foundation::{FILETIME, SYSTEMTIME};
    use windows_sys::Win32::System::Time::{
        FileTimeToSystemTime, SystemTimeToFileTime, SystemTimeToTzSpecificLocalTime,
    };
    let ticks = u64::try_from((ms.div_euclid(1000) + 11_644_473_600) * 10_000_000).ok()?;
    let utc = FILETIME {
        dwLowDateTime: ticks as u32,
        dwHighDateTime: (ticks >> 32) as u32,
    };
    // SAFETY: plain data written by the calls, all alive for their length; a null zone is
    // the current one.
    unsafe {
        let mut system: SYSTEMTIME = std::mem::zeroed();
        let mut local: SYSTEMTIME = std::mem::zeroed();
        let mut local_file: FILETIME = std::mem::zeroed();
        if FileTimeToSystemTime(&utc, &mut system) == 0
            || SystemTimeToTzSpecificLocalTime(std::ptr::null(), &system, &mut local) == 0
            || SystemTimeToFileTime(&local, &mut local_file) == 0
        {
            return None;
        }
        let local_ticks = (u64::from(local_file.dwHighDateTime) << 32) | u64::from(local_file.dwLowDateTime);
        Some((local_ticks as i64 - ticks as i64) / 600_000_000)
    }
}

/// Whether `text` names its zone (`Z` or `±HH:MM` at the end).
fn has_zone(text: &str) -> bool {
    let bytes = text.trim().as_bytes();
    let n = bytes.len();
    matches!(bytes.last(), Some(b'Z' | b'z'))
        || (n >= 6 && matches!(bytes[n - 6], b'+' | b'-') && bytes[n - 3] == b':')
}

/// A typed time as the daemon takes it (RFC 3339 UTC): one without a zone is local time.
pub fn to_utc(text: &str) -> Result<String, String> {
    let ms = parse_time(text)?;
    if has_zone(text) {
        return Ok(format_time(ms));
    }
    let offset = local_offset_minutes(ms).unwrap_or(0);
    Ok(format_time(ms - offset * 60_000))
}

/// `ms` since the epoch in local time with its offset, to the second.
pub fn show_ms(ms: i64) -> String {
    let offset = local_offset_minutes(ms).unwrap_or(0);
    let local = format_time(ms + offset * 60_000);
    // `2026-12-01T13:23:39.123Z` → `2026-12-01 13:23:39`
    let clock = local.get(..19).unwrap_or(&local).replacen('T', " ", 1);
    let sign = if offset < 0 { '-' } else { '+' };
    format!("{clock}{sign}{:02}:{:02}", offset.abs() / 60, offset.abs() % 60)
}

/// A time the daemon gave (RFC 3339) in local time, or as given when it is not one.
pub fn show(text: &str) -> String {
    parse_time(text).map_or_else(|_| text.to_string(), show_ms)
}

/// An RFC 3339 time of an answer in the local time zone with its offset, as
/// `2026-11-30 10:05:01+01:00` (it pastes back into `--since` and `--at`).
pub fn answer_time(time: &str) -> String {
    super::escape::text(&show(time)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shown_time_reads_back_as_the_same_instant() {
        for ms in [0, 1_764_590_619_000, 1_780_000_000_123] {
            let shown = show_ms(ms);
            assert_eq!(
                parse_time(&to_utc(&shown).expect("parses")),
                Ok(ms - ms % 1000),
                "{shown}"
            );
        }
    }

    #[test]
    fn a_time_with_a_zone_is_kept_and_one_without_is_local() {
        assert_eq!(
            to_utc("2026-12-01T10:00:00Z").as_deref(),
            Ok("2026-12-01T10:00:00.000Z")
        );
        assert_eq!(
            to_utc("2026-12-01T11:00:00+01:00").as_deref(),
            Ok("2026-12-01T10:00:00.000Z")
        );
        let local = to_utc("2026-12-01 10:00:00").expect("parses");
        let offset = local_offset_minutes(parse_time("2026-12-01T10:00:00Z").expect("a time")).unwrap_or(0);
        assert_eq!(
            parse_time(&local),
            Ok(parse_time("2026-12-01T10:00:00Z").unwrap_or(0) - offset * 60_000)
        );
    }
}

//! Comparing RFC 3339 timestamps from providers with the clock, without a
//! date library.

use std::time::{SystemTime, UNIX_EPOCH};

/// Whether the UTC timestamp `at` (`2026-07-30T18:54:08.96Z`) lies before
/// `now`. A timestamp that cannot be read counts as not past, so the
/// provider decides.
pub(crate) fn is_past(at: &str, now: SystemTime) -> bool {
    let Ok(elapsed) = now.duration_since(UNIX_EPOCH) else {
        return false;
    };
    // Same-format strings compare in time order up to the seconds.
    let now = format_utc(elapsed.as_secs());
    match at.get(..19) {
        Some(prefix) if prefix.as_bytes().get(10) == Some(&b'T') => prefix < now.as_str(),
        _ => false,
    }
}

/// `YYYY-MM-DDTHH:MM:SS` for seconds since the Unix epoch.
fn format_utc(secs: u64) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Year, month and day of a day count since 1970-01-01 (proleptic
/// Gregorian calendar, Howard Hinnant's days-to-civil algorithm).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn compares_with_the_clock() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00");
        assert_eq!(format_utc(951_782_400), "2000-02-29T00:00:00");
        assert_eq!(format_utc(1_785_437_648), "2026-07-30T18:54:08");
        let now = UNIX_EPOCH + Duration::from_secs(1_785_437_648);
        assert!(is_past("2026-07-30T18:54:07.9Z", now));
        assert!(!is_past("2026-07-30T18:54:09Z", now));
        assert!(!is_past("tomorrow", now));
    }
}

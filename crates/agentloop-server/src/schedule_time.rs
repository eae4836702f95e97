//! When a schedule's ticks fall: a cron expression read in an IANA time
//! zone ([`Recurrence`]), in Unix milliseconds. Five fields (minute, hour,
//! day of month, month, day of week) or six with seconds first; names of
//! months and days, ranges, steps, lists, `L`, `W` and `#` as croner reads
//! them. A wall-clock time a zone skips (a clock moving forward) has no
//! tick; one it repeats has one, at its first instant.

use std::str::FromStr;

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

/// Why an expression or a zone was refused, in words for the person who
/// wrote it.
#[derive(Debug, thiserror::Error)]
pub enum RecurrenceError {
    /// Not a cron expression.
    #[error(
        "invalid cron expression {expression:?}: {reason}; write five fields (minute hour \
         day-of-month month day-of-week, e.g. \"0 9 * * MON-FRI\") or six with seconds first \
         (e.g. \"*/30 * * * * *\")"
    )]
    Cron {
        /// The expression.
        expression: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Not an IANA time zone.
    #[error("unknown time zone {0:?}: give an IANA name such as \"UTC\" or \"Europe/Paris\"")]
    Zone(String),
    /// An expression no date matches (the 30th of February), or none
    /// after now.
    #[error("the cron expression {0:?} never fires")]
    Never(String),
    /// A field longer than it may be.
    #[error("{field} must be at most {max} characters")]
    TooLong {
        /// The field (`cron`, `time_zone`).
        field: &'static str,
        /// Its most characters.
        max: usize,
    },
}

/// The zone of a schedule given none.
pub const DEFAULT_TIME_ZONE: &str = "UTC";

/// Longest cron expression, in characters.
pub const MAX_CRON_CHARS: usize = 200;

/// Longest time zone name, in characters.
pub const MAX_ZONE_CHARS: usize = 64;

/// The first tick of `cron` read in `zone` strictly after `now` (Unix
/// ms), or why there is none.
pub fn first_tick(cron: &str, zone: &str, now: i64) -> Result<i64, RecurrenceError> {
    if cron.chars().count() > MAX_CRON_CHARS {
        return Err(RecurrenceError::TooLong {
            field: "cron",
            max: MAX_CRON_CHARS,
        });
    }
    if zone.chars().count() > MAX_ZONE_CHARS {
        return Err(RecurrenceError::TooLong {
            field: "time_zone",
            max: MAX_ZONE_CHARS,
        });
    }
    Recurrence::parse(cron, zone)?
        .next_after(now)
        .ok_or_else(|| RecurrenceError::Never(cron.to_owned()))
}

/// A cron expression in a time zone.
#[derive(Debug, Clone)]
pub struct Recurrence {
    cron: Cron,
    zone: Tz,
}

impl Recurrence {
    /// Reads `expression` in `zone`; refuses an expression with no tick in
    /// the next years.
    pub fn parse(expression: &str, zone: &str) -> Result<Self, RecurrenceError> {
        let zone = Tz::from_str(zone.trim()).map_err(|_| RecurrenceError::Zone(zone.to_owned()))?;
        let fields = expression.split_whitespace().count();
        if !(5..=6).contains(&fields) && !expression.trim_start().starts_with('@') {
            return Err(RecurrenceError::Cron {
                expression: expression.to_owned(),
                reason: format!("it has {fields} fields"),
            });
        }
        let cron = CronParser::builder()
            .seconds(Seconds::Optional)
            .year(Year::Disallowed)
            .build()
            .parse(expression)
            .map_err(|e| RecurrenceError::Cron {
                expression: expression.to_owned(),
                reason: e.to_string(),
            })?;
        let recurrence = Self { cron, zone };
        if recurrence.next_after(0).is_none() {
            return Err(RecurrenceError::Never(expression.to_owned()));
        }
        Ok(recurrence)
    }

    /// The first tick strictly after `ms` (Unix ms), if there is one.
    pub fn next_after(&self, ms: i64) -> Option<i64> {
        let from = self.at(ms)?;
        self.cron
            .find_next_occurrence(&from, false)
            .ok()
            .map(|tick| tick.timestamp_millis())
    }

    /// The last tick at or before `ms` (Unix ms), if there is one.
    pub fn latest_at_or_before(&self, ms: i64) -> Option<i64> {
        let from = self.at(ms)?;
        self.cron
            .find_previous_occurrence(&from, true)
            .ok()
            .map(|tick| tick.timestamp_millis())
    }

    /// The whole second holding `ms`, in the zone.
    fn at(&self, ms: i64) -> Option<DateTime<Tz>> {
        Utc.timestamp_opt(ms.div_euclid(1000), 0)
            .single()
            .map(|utc| utc.with_timezone(&self.zone))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2024-01-15T10:30:00Z.
    const MONDAY: i64 = 1_705_314_600_000;

    #[test]
    fn ticks_fall_in_the_zone() {
        let nine = Recurrence::parse("0 9 * * MON-FRI", "Europe/Paris").unwrap();
        // 09:00 in Paris in January is 08:00 UTC; 10:30 UTC is past it, so
        // the next is Tuesday's.
        let next = nine.next_after(MONDAY).unwrap();
        assert_eq!(next, MONDAY - 9_000_000 + 86_400_000);
        assert_eq!(nine.latest_at_or_before(MONDAY), Some(MONDAY - 9_000_000));
        assert_eq!(nine.latest_at_or_before(next), Some(next));
    }

    #[test]
    fn seconds_are_a_sixth_field() {
        let every = Recurrence::parse("*/1 * * * * *", "UTC").unwrap();
        assert_eq!(every.next_after(MONDAY), Some(MONDAY + 1_000));
        assert_eq!(every.next_after(MONDAY + 400), Some(MONDAY + 1_000));
        assert_eq!(every.latest_at_or_before(MONDAY + 999), Some(MONDAY));
    }

    #[test]
    fn bad_input_is_named() {
        let zone = Recurrence::parse("* * * * *", "Mars/Olympus").unwrap_err();
        assert!(zone.to_string().contains("Mars/Olympus"), "{zone}");
        let cron = Recurrence::parse("61 * * * *", "UTC").unwrap_err();
        assert!(matches!(cron, RecurrenceError::Cron { .. }), "{cron}");
        let fields = Recurrence::parse("* * *", "UTC").unwrap_err();
        assert!(fields.to_string().contains("3 fields"), "{fields}");
        let never = Recurrence::parse("0 0 30 2 *", "UTC").unwrap_err();
        assert!(matches!(never, RecurrenceError::Never(_)), "{never}");
    }
}

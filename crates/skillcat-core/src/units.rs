//! Durations, ages and sizes as people write them (`10s`, `1h`, `16MiB`): the one parser of
//! each, shared by every option that takes one (the server's limits, the HTTP source's index
//! age, the registry's upload sizes), so every place accepts the same spellings.

use std::time::Duration;

/// A duration, age or size that does not parse; its message says what would.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// Not a number followed by `ms`, `s` or `m`.
    #[error("{0:?} is not a duration (say 10s, 500ms or 2m)")]
    NotDuration(String),
    /// Zero, negative or too large for a duration.
    #[error("{0:?} is not a positive duration")]
    NotPositiveDuration(String),
    /// Not `0` or a duration in `s`, `m` or `h`.
    #[error("{0:?} is not an age (say 0, 90s, 10m or 1h)")]
    NotAge(String),
    /// Not a whole number of bytes, with or without a unit.
    #[error("{0:?} is not a size (say 16MiB or 1048576)")]
    NotSize(String),
    /// Zero, or more bytes than a `u64` holds.
    #[error("{0:?} is not a positive size")]
    NotPositiveSize(String),
}

/// A duration: `10s`, `500ms`, `2m`, or plain seconds (`1.5`); never zero.
pub fn parse_duration(s: &str) -> Result<Duration, UnitError> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| UnitError::NotDuration(s.to_string()))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        _ => return Err(UnitError::NotDuration(s.to_string())),
    };
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| UnitError::NotPositiveDuration(s.to_string()))
}

/// An age (how old a cached copy may be): `0` (always ask again), `90s`, `10m`, `1h`.
pub fn parse_age(s: &str) -> Result<Duration, UnitError> {
    let t = s.trim();
    if t.trim_end_matches(['s', 'm', 'h']).parse::<f64>() == Ok(0.0) {
        return Ok(Duration::ZERO);
    }
    match t.strip_suffix('h') {
        Some(hours) => parse_duration(&format!("{hours}m")).map(|d| d * 60),
        None => parse_duration(t),
    }
    .map_err(|_| UnitError::NotAge(s.to_string()))
}

/// A size in bytes: `16MiB`, `512KiB`, `1GiB`, `2MB`, `10kB`, or plain bytes; never zero.
pub fn parse_size(s: &str) -> Result<u64, UnitError> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| UnitError::NotSize(s.to_string()))?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        _ => return Err(UnitError::NotSize(s.to_string())),
    };
    n.checked_mul(mult)
        .filter(|&n| n > 0)
        .ok_or_else(|| UnitError::NotPositiveSize(s.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_each_unit_and_the_refusals() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration(" 500ms "), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(
            parse_duration("0s"),
            Err(UnitError::NotPositiveDuration("0s".into()))
        );
        assert_eq!(
            parse_duration("1h"),
            Err(UnitError::NotDuration("1h".into()))
        );
        assert_eq!(
            parse_duration("ten").unwrap_err().to_string(),
            "\"ten\" is not a duration (say 10s, 500ms or 2m)"
        );
    }

    #[test]
    fn ages_take_hours_and_zero() {
        assert_eq!(parse_age("0"), Ok(Duration::ZERO));
        assert_eq!(parse_age("0h"), Ok(Duration::ZERO));
        assert_eq!(parse_age("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_age("168h"), Ok(Duration::from_secs(168 * 3600)));
        assert_eq!(parse_age("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(
            parse_age("soon").unwrap_err().to_string(),
            "\"soon\" is not an age (say 0, 90s, 10m or 1h)"
        );
    }

    #[test]
    fn sizes_in_binary_and_decimal_units() {
        assert_eq!(parse_size("16MiB"), Ok(16 << 20));
        assert_eq!(parse_size("512KiB"), Ok(512 << 10));
        assert_eq!(parse_size("2MB"), Ok(2_000_000));
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_size("0"), Err(UnitError::NotPositiveSize("0".into())));
        assert_eq!(
            parse_size("99999999999GiB"),
            Err(UnitError::NotPositiveSize("99999999999GiB".into()))
        );
        assert_eq!(
            parse_size("16 parsecs").unwrap_err().to_string(),
            "\"16 parsecs\" is not a size (say 16MiB or 1048576)"
        );
    }
}

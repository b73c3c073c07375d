//! The one parser of durations given in seconds on the command line (`--timeout`,
//! `--start-timeout` of `run`, `record`, `race`, `fuzz` and `matrix`), so every command
//! accepts the same forms and says the same thing about a bad one. clap names the flag in
//! its error: `invalid value '0' for '--timeout <SECS>': expected a number of seconds above
//! 0 (at most 86400), got "0"`.

use std::str::FromStr;
use std::time::Duration;

/// The longest duration accepted: a day. Longer is a typo, and past it `Duration` arithmetic
/// on deadlines stops being obviously safe.
const MAX_SECS: f64 = 86_400.0;

/// A duration in whole or fractional seconds (`10`, `1.5`, `0.25`), above zero and at most
/// a day.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seconds(pub Duration);

impl FromStr for Seconds {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().parse::<f64>() {
            Ok(x) if x > 0.0 && x.is_finite() && x <= MAX_SECS => {
                Ok(Seconds(Duration::from_secs_f64(x)))
            }
            _ => Err(format!(
                "expected a number of seconds above 0 (at most {MAX_SECS}), got {s:?}"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_and_fractional_seconds_above_zero_up_to_a_day() {
        assert_eq!("10".parse(), Ok(Seconds(Duration::from_secs(10))));
        assert_eq!("1.5".parse(), Ok(Seconds(Duration::from_millis(1500))));
        assert_eq!("86400".parse(), Ok(Seconds(Duration::from_secs(86_400))));
        for bad in ["0", "-1", "0.0", "86401", "inf", "NaN", "ten", "", "10s"] {
            let e = bad.parse::<Seconds>().unwrap_err();
            assert!(e.contains("seconds above 0"), "{bad}: {e}");
        }
    }

    /// Every command with a timeout reads it with this one parser, and a bad value is a
    /// usage error naming the flag.
    #[test]
    fn every_timeout_flag_uses_it_and_names_the_flag() {
        use clap::Parser;
        for (command, flag) in [
            ("run", "--timeout"),
            ("run", "--start-timeout"),
            ("profile record", "--timeout"),
            ("profile record", "--start-timeout"),
            ("profile hold", "--timeout"),
            ("race", "--timeout"),
            ("race", "--duration"),
            ("race background", "--start-timeout"),
            ("fuzz", "--timeout"),
            ("versions timeline", "--timeout"),
            ("versions timeline", "--start-timeout"),
            ("maint matrix", "--timeout"),
            ("maint matrix", "--start-timeout"),
        ] {
            let line = |value: &str| {
                let mut words = vec!["taskproof"];
                words.extend(command.split(' '));
                // `profile hold` needs its target and profile before the flag is read.
                if command == "profile hold" {
                    words.extend(["--target", "naive", "--profile", "strict"]);
                }
                words.extend([flag, value]);
                crate::cli::Cli::try_parse_from(words)
            };
            let e = line("0").expect_err(command);
            let text = e.to_string();
            assert!(
                text.contains(&format!("'{flag} <SECS>'")) && text.contains("seconds above 0"),
                "{command} {flag}: {text}"
            );
            assert!(line("2.5").is_ok(), "{command} {flag} 2.5");
        }
    }
}

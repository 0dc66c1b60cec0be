//! A setting a caller gave that the library cannot use. The library names the setting by a
//! typed name (a layer's enum of its settings, shown as the settings struct's field, e.g.
//! `warmup_s`) and says what is wrong with the value; the caller shows the setting as the user
//! wrote it: the CLI as its flag (`--warmup-s -1: seconds in [0, 86400]`), `grade` as its
//! profile key (`[qps] warmup_s -1: ...`). So no library message names a flag the user did
//! not type.

use std::fmt;

/// What is wrong with a setting's value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Problem {
    /// A number outside its allowed range (or NaN, or infinite).
    #[error("{value}: {what} in {range}")]
    OutOfRange {
        value: String,
        /// What the value is, e.g. "seconds".
        what: &'static str,
        /// The allowed range, e.g. `(0, 86400]`.
        range: String,
    },
    /// A value that cannot be used: the value as given, and why.
    #[error("'{value}': {why}")]
    Bad { value: String, why: String },
    /// Free-form validation text, read after the setting's name (`is empty; give the token
    /// clients must send`): for checks that have no single value to quote.
    #[error("{0}")]
    Says(String),
}

/// A rejected setting: which one (`S`, a layer's enum of its settings) and what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{setting} {problem}")]
pub struct SettingError<S: fmt::Display + fmt::Debug> {
    pub setting: S,
    pub problem: Problem,
}

impl<S: fmt::Display + fmt::Debug> SettingError<S> {
    pub fn new(setting: S, problem: Problem) -> Self {
        SettingError { setting, problem }
    }

    /// `setting` is `value` (quoted), which cannot be used because `why`.
    pub fn bad(setting: S, value: impl fmt::Display, why: impl Into<String>) -> Self {
        SettingError::new(
            setting,
            Problem::Bad {
                value: value.to_string(),
                why: why.into(),
            },
        )
    }

    /// `setting` `says` (free text that follows the setting's name).
    pub fn says(setting: S, says: impl Into<String>) -> Self {
        SettingError::new(setting, Problem::Says(says.into()))
    }

    /// `setting` is `value`, outside `range`.
    pub fn range(setting: S, value: impl fmt::Display, what: &'static str, range: String) -> Self {
        SettingError::new(
            setting,
            Problem::OutOfRange {
                value: value.to_string(),
                what,
                range,
            },
        )
    }

    /// The message with the setting shown as `name` (a flag, a profile key).
    pub fn named(&self, name: &str) -> String {
        format!("{name} {}", self.problem)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy)]
    struct Warmup;
    impl fmt::Display for Warmup {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("warmup_s")
        }
    }

    #[test]
    fn the_caller_chooses_the_name() {
        let e = SettingError::range(Warmup, -1, "seconds", "[0, 10]".into());
        assert_eq!(e.to_string(), "warmup_s -1: seconds in [0, 10]");
        assert_eq!(e.named("--warmup-s"), "--warmup-s -1: seconds in [0, 10]");
        assert_eq!(
            SettingError::bad(Warmup, "x", "not a number").named("[qps] warmup_s"),
            "[qps] warmup_s 'x': not a number"
        );
        assert_eq!(
            SettingError::says(Warmup, "is empty").to_string(),
            "warmup_s is empty"
        );
    }
}

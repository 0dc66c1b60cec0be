//! The standard's grading tables as data, and the levels they give. This module sits at the
//! bottom of the dependency graph with `util`: models, reports and grades all read it.
//!
//! Table 1 (parameter size, MB = 10^6 bytes) and Table 2 (compute, G = 10^9 FLOPs) share
//! one ladder: C1 >= 1000, C2 >= 100, C3 >= 10, C4 > 0 (SPEC.md §4). C1 is the largest
//! model class. A model with no parameters (or no FLOPs) has no level.

use serde::{Deserialize, Serialize};

/// A level of the standard's tables. C1 is the top rung of Tables 1–2 (the largest models)
/// and of Table 5 (the most demanding speed); in Table 3 C4 is the strictest accuracy.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum Level {
    C1,
    C2,
    C3,
    C4,
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Level::C1 => "C1",
            Level::C2 => "C2",
            Level::C3 => "C3",
            Level::C4 => "C4",
        })
    }
}

impl std::str::FromStr for Level {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_uppercase().as_str() {
            "C1" => Ok(Level::C1),
            "C2" => Ok(Level::C2),
            "C3" => Ok(Level::C3),
            "C4" => Ok(Level::C4),
            _ => Err(format!("'{s}' is not a level: use C1, C2, C3 or C4")),
        }
    }
}

/// Lower bounds of C1, C2, C3 in Tables 1 and 2 (C4 is anything above 0).
pub const SIZE_LADDER: [(f64, Level); 3] =
    [(1000.0, Level::C1), (100.0, Level::C2), (10.0, Level::C3)];

/// Level of Table 1 (`value` in MB) or Table 2 (`value` in GFLOPs).
pub fn size_level(value: f64) -> Option<Level> {
    if value.is_nan() || value <= 0.0 {
        return None;
    }
    for (min, level) in SIZE_LADDER {
        if value >= min {
            return Some(level);
        }
    }
    Some(Level::C4)
}

/// Upper bounds (exclusive) of Table 3: the strictest level whose bound the MSE is under.
pub const ACCURACY_LADDER: [(f64, Level); 4] = [
    (0.01, Level::C4),
    (0.1, Level::C3),
    (1.0, Level::C2),
    (10.0, Level::C1),
];

/// Level of Table 3 for an output MSE; `None` when even C1 (< 10) is missed or the MSE is
/// NaN (a NaN or Inf output fails whatever the MSE).
pub fn accuracy_level(mse: f64) -> Option<Level> {
    if mse.is_nan() {
        return None;
    }
    ACCURACY_LADDER
        .iter()
        .find(|(bound, _)| mse < *bound)
        .map(|(_, l)| *l)
}

/// The Table 3 bound of a level: MSE must be below it.
pub fn accuracy_bound(level: Level) -> f64 {
    ACCURACY_LADDER
        .iter()
        .find(|(_, l)| *l == level)
        .map(|(b, _)| *b)
        .expect("every level has a bound")
}

/// Whether an achieved Table 3 level meets a required one (C4 is the strictest, so a
/// requirement of C3 is met by C3 or C4).
pub fn accuracy_meets(achieved: Option<Level>, required: Level) -> bool {
    achieved.is_some_and(|a| a >= required)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accuracy_table_3() {
        assert_eq!(accuracy_level(0.0), Some(Level::C4));
        assert_eq!(accuracy_level(0.009_999), Some(Level::C4));
        assert_eq!(accuracy_level(0.01), Some(Level::C3));
        assert_eq!(accuracy_level(0.5), Some(Level::C2));
        assert_eq!(accuracy_level(1.0), Some(Level::C1));
        assert_eq!(accuracy_level(9.99), Some(Level::C1));
        assert_eq!(accuracy_level(10.0), None);
        assert_eq!(accuracy_level(f64::NAN), None);
        assert!(accuracy_meets(Some(Level::C4), Level::C3));
        assert!(accuracy_meets(Some(Level::C3), Level::C3));
        assert!(!accuracy_meets(Some(Level::C2), Level::C3));
        assert!(!accuracy_meets(None, Level::C1));
    }

    #[test]
    fn ladder_boundaries() {
        assert_eq!(size_level(0.0), None);
        assert_eq!(size_level(f64::NAN), None);
        assert_eq!(size_level(1e-9), Some(Level::C4));
        assert_eq!(size_level(9.999), Some(Level::C4));
        assert_eq!(size_level(10.0), Some(Level::C3));
        assert_eq!(size_level(99.99), Some(Level::C3));
        assert_eq!(size_level(100.0), Some(Level::C2));
        assert_eq!(size_level(999.9), Some(Level::C2));
        assert_eq!(size_level(1000.0), Some(Level::C1));
        assert_eq!(size_level(1e6), Some(Level::C1));
    }
}

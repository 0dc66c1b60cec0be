//! The certification run: scenario profiles and the grade.

pub mod profile;

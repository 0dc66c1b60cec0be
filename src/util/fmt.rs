//! Number formatting shared by every view.

/// `1234567` -> `1,234,567`.
pub fn thousands(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// An error figure in scientific notation with 4 decimals; "n/a: NaN/Inf output" for NaN.
pub fn sci(v: f64) -> String {
    if v.is_nan() {
        "n/a: NaN/Inf output".into()
    } else if v == 0.0 {
        "0".into()
    } else {
        format!("{v:.4e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(4_089_184_256), "4,089,184,256");
    }
}

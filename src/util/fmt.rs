//! Number and error formatting shared by every view.

/// An error and its sources, each said once: libloading's and NVML's errors put the useful
/// part (the file, the reason) in their source, and their `Display` alone is terse.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}

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

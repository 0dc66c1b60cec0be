//! A seeded generator whose stream is the same on every machine: SplitMix64 (Steele, Lea,
//! Flood 2014), and normals by the Irwin–Hall sum of twelve uniforms, which needs only
//! additions (no `ln`/`cos`, whose last bits differ between math libraries), so generated
//! weights and inputs hash the same everywhere.

/// SplitMix64.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1), 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Approximately standard normal: Σ of 12 uniforms − 6 (mean 0, variance 1, tails
    /// clipped at ±6, which suits weight initialisation).
    pub fn normal(&mut self) -> f64 {
        let mut s = 0.0;
        for _ in 0..12 {
            s += self.unit();
        }
        s - 6.0
    }
}

/// A seed derived from a text label (FNV-1a), so each tensor's stream is independent of
/// the order the others are generated in.
pub fn seed_of(label: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in label.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_values() {
        // First outputs for seed 0 (Vigna's reference implementation).
        let mut r = SplitMix64(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        // FNV-1a of "a" is 0xaf63dc4c8601ec8c.
        assert_eq!(seed_of("a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn normal_moments() {
        let mut r = SplitMix64(42);
        let n = 20_000;
        let v: Vec<f64> = (0..n).map(|_| r.normal()).collect();
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.03, "{mean}");
        assert!((var - 1.0).abs() < 0.05, "{var}");
    }
}

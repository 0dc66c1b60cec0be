//! Open-loop arrival schedules: Poisson (exponential gaps, seeded) or uniform.

use crate::report::schema::qps::Arrival;

/// `n` arrival offsets from the start at `rate` per second, seconds.
pub fn schedule(arrival: Arrival, rate: f64, n: usize, seed: u64) -> Vec<f64> {
    let mut rng = crate::util::rng::SplitMix64(seed);
    let mut t = 0.0;
    (0..n)
        .map(|_| {
            let gap = match arrival {
                Arrival::Uniform => 1.0 / rate,
                // Exponential gaps: -ln(U)/rate with U in (0, 1].
                Arrival::Poisson => -(1.0 - rng.unit()).ln() / rate,
            };
            let at = t;
            t += gap;
            at
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_schedule_has_the_rate() {
        let s = schedule(Arrival::Poisson, 200.0, 20_000, 7);
        let mean_gap = s.last().unwrap() / (s.len() - 1) as f64;
        assert!((mean_gap - 0.005).abs() < 0.0002, "{mean_gap}");
        assert_eq!(s, schedule(Arrival::Poisson, 200.0, 20_000, 7));
        let u = schedule(Arrival::Uniform, 100.0, 3, 0);
        assert_eq!(u, vec![0.0, 0.01, 0.02]);
    }
}

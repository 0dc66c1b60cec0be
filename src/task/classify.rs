//! Classification post-processing: softmax and top-k.

pub use crate::report::schema::run::Class;

/// Numerically stable softmax (max subtracted).
pub fn softmax(logits: &[f32]) -> Vec<f32> {
    let m = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let e: Vec<f32> = logits.iter().map(|&v| (v - m).exp()).collect();
    let s: f32 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

/// The `k` most probable classes, most probable first (ties: lower index first).
pub fn top_k(logits: &[f32], k: usize, labels: &[String]) -> Vec<Class> {
    let p = softmax(logits);
    let mut idx: Vec<usize> = (0..p.len()).collect();
    idx.sort_by(|&a, &b| p[b].total_cmp(&p[a]).then(a.cmp(&b)));
    idx.into_iter()
        .take(k)
        .map(|i| Class {
            class: i,
            label: labels
                .get(i)
                .cloned()
                .unwrap_or_else(|| format!("class {i}")),
            probability: p[i],
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softmax_and_top_k() {
        // softmax([0, ln 3]) = [1/4, 3/4]; large logits do not overflow.
        let p = softmax(&[0.0, 3f32.ln()]);
        assert!((p[0] - 0.25).abs() < 1e-6 && (p[1] - 0.75).abs() < 1e-6);
        let p = softmax(&[1000.0, 1000.0]);
        assert_eq!(p, vec![0.5, 0.5]);
        let t = top_k(
            &[0.1, 2.0, 2.0, -1.0],
            2,
            &["a".into(), "b".into(), "c".into()],
        );
        assert_eq!((t[0].class, t[1].class), (1, 2));
        assert_eq!(t[0].label, "b");
    }
}

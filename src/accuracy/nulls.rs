//! Null baselines: the grade a broken device would get. Every accuracy result also grades
//! three null outputs against the same reference — zeros, the per-element mean of the
//! reference outputs over the inputs (the best input-independent constant), and each
//! input's reference graded against another input's (plausible outputs that ignore the
//! input). A required level that a null output meets cannot tell a broken device from a
//! working one, so the accuracy grade is then INVALID (SPEC.md, DESIGN.md "Verdicts that can
//! fail"). The nulls need no device: they are computed from the reference alone.

use crate::accuracy::metrics::Accumulator;
use crate::model::tensor::TensorData;
use crate::report::schema::accuracy::{Discrimination, NullBaseline, NullKind};
use crate::standard::{self, Level};

/// What the discrimination figures mean.
pub const DEFINITION: &str = "each null output is graded against the reference like the device's (MSE per output pooled over the inputs, the worst output decides): zeros; the per-element mean of the reference outputs over the inputs (input-independent); input k's reference against input k+1's (outputs that ignore the input). The grade counts only when no null output meets the required level. Input dependence = RMS(reference − its per-input mean) / RMS(reference), the smallest over the outputs.";

/// The reference outputs of every input, output by output, as f64.
struct Refs<'a> {
    names: &'a [String],
    /// sets[k][j]: input k, output j.
    sets: Vec<Vec<Vec<f64>>>,
    shapes: Vec<Vec<Vec<usize>>>,
}

impl Refs<'_> {
    /// Whether output `j` has the same shape for every input.
    fn same_shape(&self, j: usize) -> bool {
        self.shapes.windows(2).all(|w| w[0][j] == w[1][j])
    }
}

/// The worst output's MSE of a null, and the grade it gets.
fn grade(
    kind: NullKind,
    names: &[String],
    acc: Option<Vec<Accumulator>>,
    required: Option<Level>,
    unavailable: &str,
) -> NullBaseline {
    let Some(acc) = acc else {
        return NullBaseline {
            kind,
            mse: None,
            worst_output: None,
            level: None,
            meets_required: None,
            unavailable: Some(unavailable.to_string()),
        };
    };
    let (worst, mse) = acc
        .iter()
        .map(|a| a.finish().mse)
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((0, f64::NAN));
    let level = standard::accuracy_level(mse);
    NullBaseline {
        kind,
        mse: Some(mse),
        worst_output: names.get(worst).cloned(),
        level,
        meets_required: required.map(|r| standard::accuracy_meets(level, r)),
        unavailable: None,
    }
}

fn zeros(r: &Refs) -> Vec<Accumulator> {
    let mut acc = vec![Accumulator::default(); r.names.len()];
    for set in &r.sets {
        for (j, y) in set.iter().enumerate() {
            for &v in y {
                acc[j].push(0.0, v);
            }
        }
    }
    acc
}

/// The per-element mean of output `j` over the inputs.
fn mean_of(r: &Refs, j: usize) -> Vec<f64> {
    let n = r.sets.len() as f64;
    let mut m = vec![0.0; r.sets[0][j].len()];
    for set in &r.sets {
        for (e, v) in set[j].iter().enumerate() {
            m[e] += v / n;
        }
    }
    m
}

fn mean(r: &Refs) -> Option<(Vec<Accumulator>, Option<f64>)> {
    if !(0..r.names.len()).all(|j| r.same_shape(j)) {
        return None;
    }
    let mut acc = vec![Accumulator::default(); r.names.len()];
    let mut dependence: Option<f64> = None;
    for (j, a) in acc.iter_mut().enumerate() {
        let m = mean_of(r, j);
        let (mut dev, mut energy) = (0.0, 0.0);
        for set in &r.sets {
            for (e, &y) in set[j].iter().enumerate() {
                a.push(m[e], y);
                dev += (y - m[e]).powi(2);
                energy += y * y;
            }
        }
        if energy > 0.0 {
            let d = (dev / energy).sqrt();
            dependence = Some(dependence.map_or(d, |x: f64| x.min(d)));
        }
    }
    Some((acc, dependence))
}

fn permuted(r: &Refs) -> Option<Vec<Accumulator>> {
    let n = r.sets.len();
    if n < 2 || !(0..r.names.len()).all(|j| r.same_shape(j)) {
        return None;
    }
    let mut acc = vec![Accumulator::default(); r.names.len()];
    for k in 0..n {
        let other = &r.sets[(k + 1) % n];
        for (j, y) in r.sets[k].iter().enumerate() {
            for (&x, &v) in other[j].iter().zip(y) {
                acc[j].push(x, v);
            }
        }
    }
    Some(acc)
}

/// The null baselines of an opened reference (acceval's reference folder, or an ONNX
/// test-data folder) at `required`, without a device: what `zoo list` shows for each zoo
/// model. Errors name the file and what is wrong with it.
pub fn of_reference(
    r: &crate::accuracy::reference::Reference,
    required: Option<Level>,
) -> Result<Discrimination, crate::accuracy::reference::RefError> {
    let (n_in, names) = match &r.manifest {
        Some(m) => (
            m.inputs.len(),
            m.outputs.iter().map(|o| o.name.clone()).collect::<Vec<_>>(),
        ),
        // An ONNX test-data folder: count the files of its first set.
        None => {
            let count = |prefix: &str| {
                (0..)
                    .take_while(|j| r.sets[0].join(format!("{prefix}_{j}.pb")).is_file())
                    .count()
            };
            let n_out = count("output");
            (
                count("input"),
                (0..n_out).map(|j| format!("output_{j}")).collect(),
            )
        }
    };
    let mut refs = Vec::with_capacity(r.sets.len());
    for k in 0..r.sets.len() {
        let set = r.load_set(k, n_in, names.len())?;
        refs.push(set.outputs.into_iter().map(|t| t.data).collect::<Vec<_>>());
    }
    Ok(discrimination(&names, &refs, required))
}

/// The null baselines of a reference (its outputs, input by input) at `required`.
pub fn discrimination(
    names: &[String],
    refs: &[Vec<TensorData>],
    required: Option<Level>,
) -> Discrimination {
    let r = Refs {
        names,
        sets: refs
            .iter()
            .map(|s| s.iter().map(TensorData::to_f64).collect())
            .collect(),
        shapes: refs
            .iter()
            .map(|s| s.iter().map(|t| t.shape().to_vec()).collect())
            .collect(),
    };
    if r.sets.is_empty() {
        return Discrimination {
            definition: DEFINITION.into(),
            nulls: Vec::new(),
            input_dependence: None,
            discriminating: None,
            reason: Some("no input was graded".into()),
        };
    }
    let (mean_acc, dependence) = match mean(&r) {
        Some((a, d)) => (Some(a), d),
        None => (None, None),
    };
    let nulls = vec![
        grade(NullKind::Zeros, names, Some(zeros(&r)), required, ""),
        grade(
            NullKind::Mean,
            names,
            mean_acc,
            required,
            "the outputs' shapes differ between inputs",
        ),
        grade(
            NullKind::Permuted,
            names,
            permuted(&r),
            required,
            if r.sets.len() < 2 {
                "one input: there is no other input's reference to use"
            } else {
                "the outputs' shapes differ between inputs"
            },
        ),
    ];
    let passing = nulls.iter().find(|n| n.meets_required == Some(true));
    let reason = match (passing, required) {
        (Some(n), Some(req)) => Some(format!(
            "this reference cannot tell a broken device from a working one: {} scores {} (MSE {:.4e}), and {req} is required{}",
            match n.kind {
                NullKind::Zeros => "an all-zero output".to_string(),
                NullKind::Mean => "a constant output (the mean of the reference outputs)".into(),
                NullKind::Permuted =>
                    "outputs that ignore the input (another input's reference)".into(),
            },
            n.level.map(|l| l.to_string()).unwrap_or_default(),
            n.mse.unwrap_or(f64::NAN),
            if r.sets.len() < 2 {
                "; with one input the mean of the reference outputs is the reference itself: give at least two inputs"
            } else {
                ""
            }
        )),
        _ => None,
    };
    Discrimination {
        definition: DEFINITION.into(),
        discriminating: required.map(|_| passing.is_none()),
        nulls,
        input_dependence: dependence,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::ArrayD;

    fn t(v: &[f32]) -> TensorData {
        TensorData::F32(ArrayD::from_shape_vec(vec![1, v.len()], v.to_vec()).unwrap())
    }

    #[test]
    fn hand_computed_nulls() {
        // Two inputs, one output: [1, 3] and [3, 5]. Zeros: (1+9+9+25)/4 = 11.
        // Mean [2, 4]: every element is 1 away: MSE 1. Permuted: 2 away: MSE 4.
        let names = vec!["y".to_string()];
        let d = discrimination(
            &names,
            &[vec![t(&[1.0, 3.0])], vec![t(&[3.0, 5.0])]],
            Some(Level::C2),
        );
        let mse: Vec<f64> = d.nulls.iter().map(|n| n.mse.unwrap()).collect();
        assert_eq!(mse, vec![11.0, 1.0, 4.0]);
        // C2 needs MSE < 1: the mean null's 1.0 does not meet it, nor do the others.
        assert_eq!(d.discriminating, Some(true));
        // Input dependence: sqrt((1+1+1+1) / (1+9+9+25)) = sqrt(4/44).
        assert!((d.input_dependence.unwrap() - (4.0f64 / 44.0).sqrt()).abs() < 1e-12);
        // At C1 (< 10) the mean and permuted nulls pass: INVALID, and the reason says so.
        let d = discrimination(
            &names,
            &[vec![t(&[1.0, 3.0])], vec![t(&[3.0, 5.0])]],
            Some(Level::C1),
        );
        assert_eq!(d.discriminating, Some(false));
        assert!(d.reason.unwrap().contains("a constant output"));
    }

    #[test]
    fn one_input_never_discriminates() {
        let names = vec!["y".to_string()];
        let d = discrimination(&names, &[vec![t(&[1.0, 3.0])]], Some(Level::C4));
        assert_eq!(d.nulls[1].mse, Some(0.0));
        assert!(d.nulls[2].unavailable.is_some());
        assert_eq!(d.discriminating, Some(false));
        assert!(d.reason.unwrap().contains("at least two inputs"));
    }
}

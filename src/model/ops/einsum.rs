//! Einsum equations: the labels of each operand and of the output, and the size of every
//! label (an ellipsis is expanded to the labels 'A', 'B', ...).

use std::collections::BTreeMap;

use crate::model::shape::{Dim, R, Shape, ShapeError, check_eq, contra, shape_str};

/// A parsed Einsum equation with the size of every label.
pub struct Einsum {
    pub inputs: Vec<Vec<char>>,
    pub output: Vec<char>,
    pub sizes: BTreeMap<char, Dim>,
}

/// Labels an ellipsis stands for in a term of `term_len` characters over a rank-`rank`
/// operand.
fn ellipsis_rank(term: &str, rank: usize, node: &str) -> R<usize> {
    if !term.contains("...") {
        return Ok(0);
    }
    match (rank + 3).checked_sub(term.chars().count()) {
        Some(k) => Ok(k),
        None => contra(format!(
            "node '{node}' (Einsum): term '{term}' has more labels than its operand's rank {rank}"
        )),
    }
}

fn expand(term: &str, k: usize, ell: &[char]) -> Vec<char> {
    match term.split_once("...") {
        Some((a, b)) => {
            let mut v: Vec<char> = a.chars().collect();
            v.extend(&ell[ell.len().saturating_sub(k)..]);
            v.extend(b.chars());
            v
        }
        None => term.chars().collect(),
    }
}

impl Einsum {
    /// Parses `eq` against the operand shapes.
    pub fn parse(eq: &str, shapes: &[&Shape], node: &str) -> R<Einsum> {
        let eq: String = eq.chars().filter(|c| !c.is_whitespace()).collect();
        let (lhs, rhs) = match eq.split_once("->") {
            Some((l, r)) => (l.to_string(), Some(r.to_string())),
            None => (eq.clone(), None),
        };
        let terms: Vec<&str> = lhs.split(',').collect();
        if terms.len() != shapes.len() {
            return contra(format!(
                "node '{node}' (Einsum): equation '{eq}' has {} operands, the node {}",
                terms.len(),
                shapes.len()
            ));
        }
        let mut ell_rank = 0;
        for (t, s) in terms.iter().zip(shapes) {
            ell_rank = ell_rank.max(ellipsis_rank(t, s.len(), node)?);
        }
        if ell_rank > 26 {
            return contra(format!(
                "node '{node}' (Einsum): an ellipsis of {ell_rank} dims"
            ));
        }
        let ell: Vec<char> = (b'A'..).take(ell_rank).map(char::from).collect();
        let mut inputs = Vec::new();
        let mut sizes = BTreeMap::new();
        for (t, s) in terms.iter().zip(shapes) {
            let labels = expand(t, ellipsis_rank(t, s.len(), node)?, &ell);
            if labels.len() != s.len() {
                return contra(format!(
                    "node '{node}' (Einsum): term '{t}' does not match operand shape {}",
                    shape_str(s)
                ));
            }
            for (c, d) in labels.iter().zip(s.iter()) {
                match sizes.get(c) {
                    Some(Dim::Known(1)) | None => {
                        sizes.insert(*c, d.clone());
                    }
                    Some(prev) => {
                        if *d != Dim::Known(1) {
                            check_eq(prev, d, node, "Einsum label size")?;
                        }
                    }
                }
            }
            inputs.push(labels);
        }
        let output = match rhs {
            Some(r) => {
                let out = expand(&r, ell_rank, &ell);
                // ONNX Runtime refuses both; tract answered `ij->k` with a tensor of 3.69.
                for (i, c) in out.iter().enumerate() {
                    let why = if !sizes.contains_key(c) {
                        "appears in no operand"
                    } else if out[..i].contains(c) {
                        "appears twice"
                    } else {
                        continue;
                    };
                    return Err(ShapeError::Malformed(format!(
                        "node '{node}' (Einsum): output label '{c}' of equation '{eq}' {why}"
                    )));
                }
                out
            }
            None => {
                let mut once: Vec<char> = sizes
                    .keys()
                    .filter(|c| {
                        c.is_lowercase() && inputs.iter().flatten().filter(|x| x == c).count() == 1
                    })
                    .copied()
                    .collect();
                once.sort();
                let mut v = ell.clone();
                v.extend(once);
                v
            }
        };
        Ok(Einsum {
            inputs,
            output,
            sizes,
        })
    }

    pub fn output_shape(&self) -> Shape {
        self.output
            .iter()
            .map(|c| self.sizes.get(c).cloned().unwrap_or(Dim::Known(1)))
            .collect()
    }

    /// Labels summed over (in an input, not in the output).
    pub fn contracted(&self) -> Vec<char> {
        self.sizes
            .keys()
            .filter(|c| !self.output.contains(c))
            .copied()
            .collect()
    }
}

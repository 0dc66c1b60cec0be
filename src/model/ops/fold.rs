//! Constant folding helpers: the small tensors of shape arithmetic, row-major, indexed
//! under numpy broadcasting, transposed, sliced, gathered and concatenated. Every
//! function returns `None` rather than panic when the value and its shape disagree or an
//! index falls outside, and nothing is built past [`MAX_CONST_ELEMS`] elements.

use crate::model::shape::{Const, MAX_CONST_ELEMS, numel};

/// Row-major strides of `dims`.
pub fn strides(dims: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1].saturating_mul(dims[i + 1]);
    }
    s
}

/// Dims as `usize` when every one is a non-negative number and the element count is
/// within the folding cap.
pub fn small_dims(dims: &[i64]) -> Option<Vec<usize>> {
    if numel(dims)? > MAX_CONST_ELEMS {
        return None;
    }
    dims.iter().map(|&d| usize::try_from(d).ok()).collect()
}

/// For each element of an `out`-shaped tensor, the flat index of the element of an
/// `input`-shaped tensor that broadcasting maps to it.
pub fn broadcast_index(out: &[usize], input: &[usize]) -> Option<Vec<usize>> {
    let n: usize = out.iter().product();
    let off = out.len().checked_sub(input.len())?;
    let in_strides = strides(input);
    let mut idx = Vec::with_capacity(n);
    let mut coord = vec![0usize; out.len()];
    for _ in 0..n {
        let mut flat = 0usize;
        for (k, (&d, &s)) in input.iter().zip(&in_strides).enumerate() {
            let c = coord[off + k];
            if d != 1 {
                if c >= d {
                    return None;
                }
                flat += c * s;
            }
        }
        idx.push(flat);
        for ax in (0..out.len()).rev() {
            coord[ax] += 1;
            if coord[ax] < out[ax] {
                break;
            }
            coord[ax] = 0;
        }
    }
    Some(idx)
}

/// `v` (of shape `dims`) broadcast to `out`.
pub fn expand(v: &Const, dims: &[usize], out: &[usize]) -> Option<Const> {
    if dims.iter().product::<usize>() != v.len() {
        return None;
    }
    v.select(&broadcast_index(out, dims)?)
}

/// `v` (of shape `dims`) with its axes permuted by `perm`.
pub fn transpose(v: &Const, dims: &[usize], perm: &[usize]) -> Option<Const> {
    if perm.len() != dims.len() || dims.iter().product::<usize>() != v.len() {
        return None;
    }
    let st = strides(dims);
    let out: Vec<usize> = perm
        .iter()
        .map(|&p| dims.get(p).copied())
        .collect::<Option<_>>()?;
    let pst: Vec<usize> = perm.iter().map(|&p| st[p]).collect();
    v.select(&walk(&out, |coord| {
        coord.iter().zip(&pst).map(|(c, s)| c * s).sum()
    }))
}

/// Visits every coordinate of an `out`-shaped tensor in row-major order.
fn walk(out: &[usize], mut f: impl FnMut(&[usize]) -> usize) -> Vec<usize> {
    let n: usize = out.iter().product();
    let mut coord = vec![0usize; out.len()];
    let mut idx = Vec::with_capacity(n);
    for _ in 0..n {
        idx.push(f(&coord));
        for ax in (0..out.len()).rev() {
            coord[ax] += 1;
            if coord[ax] < out[ax] {
                break;
            }
            coord[ax] = 0;
        }
    }
    idx
}

/// One axis of a slice: first index, length, step.
#[derive(Debug, Clone, Copy)]
pub struct Pick {
    pub start: i64,
    pub len: usize,
    pub step: i64,
}

/// `v` (of shape `dims`) sliced by one `Pick` per axis.
pub fn slice(v: &Const, dims: &[usize], picks: &[Pick]) -> Option<Const> {
    if picks.len() != dims.len() || dims.iter().product::<usize>() != v.len() {
        return None;
    }
    let st = strides(dims);
    let out: Vec<usize> = picks.iter().map(|p| p.len).collect();
    let mut bad = false;
    let idx = walk(&out, |coord| {
        let mut flat = 0usize;
        for ((c, p), (&s, &d)) in coord.iter().zip(picks).zip(st.iter().zip(dims)) {
            let i = p.start + (*c as i64) * p.step;
            match usize::try_from(i) {
                Ok(i) if i < d => flat += i * s,
                _ => bad = true,
            }
        }
        flat
    });
    if bad {
        return None;
    }
    v.select(&idx)
}

/// `v` (of shape `dims`) gathered along `axis` at `indices` (already non-negative).
pub fn gather(v: &Const, dims: &[usize], axis: usize, indices: &[usize]) -> Option<Const> {
    if axis >= dims.len() || dims.iter().product::<usize>() != v.len() {
        return None;
    }
    let outer: usize = dims[..axis].iter().product();
    let inner: usize = dims[axis + 1..].iter().product();
    let d = dims[axis];
    let mut idx = Vec::with_capacity(outer * indices.len() * inner);
    for o in 0..outer {
        for &i in indices {
            if i >= d {
                return None;
            }
            for k in 0..inner {
                idx.push((o * d + i) * inner + k);
            }
        }
    }
    v.select(&idx)
}

/// Values of shapes `dims` joined along `axis`.
pub fn concat(parts: &[(&Const, Vec<usize>)], axis: usize) -> Option<Const> {
    let ints = parts.iter().all(|(c, _)| c.is_int());
    let mut out_i = Vec::new();
    let mut out_f = Vec::new();
    let first = &parts.first()?.1;
    let outer: usize = first.get(..axis)?.iter().product();
    for o in 0..outer {
        for (c, d) in parts {
            if d.len() != first.len() || d.iter().product::<usize>() != c.len() {
                return None;
            }
            let chunk: usize = d.get(axis..)?.iter().product();
            let lo = o * chunk;
            match c {
                Const::Int(v) if ints => out_i.extend_from_slice(v.get(lo..lo + chunk)?),
                _ => out_f.extend(c.floats().get(lo..lo + chunk)?),
            }
        }
    }
    Some(if ints {
        Const::Int(out_i)
    } else {
        Const::Float(out_f)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_slice_gather_concat() {
        // [[1,2,3],[4,5,6]]
        let v = Const::Int(vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(
            transpose(&v, &[2, 3], &[1, 0]),
            Some(Const::Int(vec![1, 4, 2, 5, 3, 6]))
        );
        // rows reversed: start 1, step -1
        let p = [
            Pick {
                start: 1,
                len: 2,
                step: -1,
            },
            Pick {
                start: 0,
                len: 3,
                step: 1,
            },
        ];
        assert_eq!(
            slice(&v, &[2, 3], &p),
            Some(Const::Int(vec![4, 5, 6, 1, 2, 3]))
        );
        assert_eq!(
            gather(&v, &[2, 3], 1, &[2, 0]),
            Some(Const::Int(vec![3, 1, 6, 4]))
        );
        assert_eq!(gather(&v, &[2, 3], 1, &[3]), None);
        let w = Const::Int(vec![7, 8]);
        assert_eq!(
            concat(&[(&v, vec![2, 3]), (&w, vec![2, 1])], 1),
            Some(Const::Int(vec![1, 2, 3, 7, 4, 5, 6, 8]))
        );
        assert_eq!(
            expand(&w, &[2, 1], &[2, 2]),
            Some(Const::Int(vec![7, 7, 8, 8]))
        );
        assert_eq!(expand(&w, &[2, 1], &[3, 2]), None);
    }
}

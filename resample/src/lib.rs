//! Resampling of interleaved 8-bit images with a separable triangle (bilinear) filter whose
//! support widens when downscaling, as Pillow's `BILINEAR` does.
//!
//! The result is bit for bit that of `image` 0.25's `imageops::resize(.., FilterType::Triangle)`:
//! the same weights, computed by the same `f32` operations in the same order, the same
//! per-element order of multiply-adds, the same clamping and rounding. acceval's reference
//! outputs, INT8 calibrations and zoo hashes were made with that resize, so a resize that
//! rounded differently by one level (as `fast_image_resize`'s fixed-point convolution does)
//! would change them all. What differs is the loop order: `image` computes one output pixel
//! at a time through `get_pixel`/`put_pixel` with four channels, while here the vertical pass
//! walks whole rows (contiguous, so the compiler vectorises it) and nothing is done per pixel
//! that can be done per row or column. It is a crate of its own so that acceval's unoptimised
//! test builds still compile it optimised (`profile.dev.package."*"`), as they do `image`.

/// The input span and normalised weights of one output row or column.
struct Taps {
    left: usize,
    weights: Vec<f32>,
}

fn triangle_kernel(x: f32) -> f32 {
    if x.abs() < 1.0 { 1.0 - x.abs() } else { 0.0 }
}

/// The taps of each of `out_len` outputs over `in_len` inputs (`image`'s
/// `vertical_sample`/`horizontal_sample` weight computation; `in_len` and `out_len` > 0).
fn taps(in_len: usize, out_len: usize) -> Vec<Taps> {
    let ratio = in_len as f32 / out_len as f32;
    let sratio = if ratio < 1.0 { 1.0 } else { ratio };
    let support = sratio; // the triangle's support, 1.0, times sratio
    (0..out_len)
        .map(|o| {
            let centre = (o as f32 + 0.5) * ratio;
            let left = ((centre - support).floor() as i64).clamp(0, in_len as i64 - 1);
            let right = ((centre + support).ceil() as i64).clamp(left + 1, in_len as i64);
            let centre = centre - 0.5;
            let mut weights: Vec<f32> = (left..right)
                .map(|i| triangle_kernel((i as f32 - centre) / sratio))
                .collect();
            let mut sum = 0.0f32;
            for w in &weights {
                sum += w;
            }
            for w in &mut weights {
                *w /= sum;
            }
            // Zero weights at either end add +0.0 to sums of non-negative terms: dropping
            // them changes no bit (a third of the taps at a scale of 3).
            let mut left = left as usize;
            while weights.len() > 1 && weights[0] == 0.0 {
                weights.remove(0);
                left += 1;
            }
            while weights.len() > 1 && weights[weights.len() - 1] == 0.0 {
                weights.pop();
            }
            Taps { left, weights }
        })
        .collect()
}

/// Resizes `src` (`w`×`h` pixels of `c` interleaved 8-bit channels, rows packed) to
/// `nw`×`nh`. An empty source gives zeros; the same size gives a copy.
///
/// # Panics
/// When `src` is shorter than `w`×`h`×`c` bytes.
pub fn triangle(src: &[u8], w: usize, h: usize, c: usize, nw: usize, nh: usize) -> Vec<u8> {
    let row = w * c;
    assert!(src.len() >= row * h, "the source is shorter than w × h × c");
    if w == 0 || h == 0 {
        return vec![0; nw * nh * c];
    }
    if (w, h) == (nw, nh) {
        return src[..row * h].to_vec();
    }
    // Vertical pass into f32 rows (w × nh × c), kept between calls on this thread.
    SCRATCH.with_borrow_mut(|tmp| {
        if tmp.len() < row * nh {
            tmp.resize(row * nh, 0.0);
        }
        let tmp = &mut tmp[..row * nh];
        vertical(src, row, &taps(h, nh), tmp);
        horizontal_pass(tmp, row, c, &taps(w, nw))
    })
}

thread_local! {
    /// The vertical pass's rows: 8.3 MB for a 1920×1080 frame to 360 rows, which a fresh
    /// allocation would fault in page by page on every frame.
    static SCRATCH: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The vertical pass: each element of `tmp` (overwritten) sums its taps in order, from 0.
/// Whole rows at a
/// time, so the loop is vectorised: with AVX2 where the CPU has it (the same operations,
/// eight lanes; no fused multiply-add, so the same bits).
fn vertical(src: &[u8], row: usize, down: &[Taps], tmp: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { vertical_avx2(src, row, down, tmp) };
    }
    vertical_body(src, row, down, tmp)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn vertical_avx2(src: &[u8], row: usize, down: &[Taps], tmp: &mut [f32]) {
    vertical_body(src, row, down, tmp)
}

#[inline(always)]
fn vertical_body(src: &[u8], row: usize, down: &[Taps], tmp: &mut [f32]) {
    for (t, out) in down.iter().zip(tmp.chunks_exact_mut(row)) {
        // Every output has at least one tap; the first sets the row (0.0 + its term, as a
        // sum from 0 would), so the scratch needs no zeroing.
        let line = &src[t.left * row..(t.left + 1) * row];
        let wt = t.weights[0];
        for (acc, &v) in out.iter_mut().zip(line) {
            *acc = 0.0 + v as f32 * wt;
        }
        for (i, &wt) in t.weights.iter().enumerate().skip(1) {
            let line = &src[(t.left + i) * row..(t.left + i + 1) * row];
            for (acc, &v) in out.iter_mut().zip(line) {
                *acc += v as f32 * wt;
            }
        }
    }
}

/// The horizontal pass of the rows of `tmp` (`row` values each) to `across.len()` pixels of
/// `c` channels.
fn horizontal_pass(tmp: &[f32], row: usize, c: usize, across: &[Taps]) -> Vec<u8> {
    let nw = across.len();
    let nh = tmp.len() / row;
    let mut out = vec![0u8; nw * nh * c];
    match c {
        #[cfg(target_arch = "x86_64")]
        3 => horizontal_simd::<3>(tmp, row, across, &mut out),
        #[cfg(target_arch = "x86_64")]
        4 => horizontal_simd::<4>(tmp, row, across, &mut out),
        #[cfg(not(target_arch = "x86_64"))]
        3 => horizontal::<3>(tmp, row, across, &mut out),
        #[cfg(not(target_arch = "x86_64"))]
        4 => horizontal::<4>(tmp, row, across, &mut out),
        1 => horizontal::<1>(tmp, row, across, &mut out),
        _ => {
            for (line, dst) in tmp.chunks_exact(row).zip(out.chunks_exact_mut(nw * c)) {
                for (t, px) in across.iter().zip(dst.chunks_exact_mut(c)) {
                    for (ch, o) in px.iter_mut().enumerate() {
                        let mut acc = 0.0f32;
                        for (i, &wt) in t.weights.iter().enumerate() {
                            acc += line[(t.left + i) * c + ch] * wt;
                        }
                        *o = to_u8(acc);
                    }
                }
            }
        }
    }
    out
}

/// The horizontal pass for `C` channels, all of a pixel's channels at once (each still sums
/// its taps in order, from 0).
fn horizontal<const C: usize>(tmp: &[f32], row: usize, across: &[Taps], out: &mut [u8]) {
    let nw = across.len();
    for (line, dst) in tmp.chunks_exact(row).zip(out.chunks_exact_mut(nw * C)) {
        for (t, px) in across.iter().zip(dst.chunks_exact_mut(C)) {
            pixel_scalar::<C>(line, t, px);
        }
    }
}

/// One output pixel of [`horizontal`]: each channel sums its taps in order, from 0.
#[inline(always)]
fn pixel_scalar<const C: usize>(line: &[f32], t: &Taps, px: &mut [u8]) {
    let mut acc = [0.0f32; C];
    let span = &line[t.left * C..(t.left + t.weights.len()) * C];
    for (src, &wt) in span.chunks_exact(C).zip(&t.weights) {
        for ch in 0..C {
            acc[ch] += src[ch] * wt;
        }
    }
    for ch in 0..C {
        px[ch] = to_u8(acc[ch]);
    }
}

/// [`horizontal`] with a pixel's channels in the lanes of a vector (C ≤ 4; lanes past C load
/// the next pixel's values and are dropped): each lane does the same multiply, then add, in
/// the same order, so the same bits. The scalar loop spends its time issuing instructions
/// (21 multiply-adds per pixel at a scale of 3); with AVX two pixels of the same tap count
/// share a vector, else one pixel takes an SSE vector (SSE2 is part of x86_64). For
/// 1920×1080 → 640×360 the pass took 2.63 ms scalar, 1.39 ms SSE, 1.0 ms AVX (medians,
/// this machine). A pixel whose last 4-float load would pass the row's end is scalar.
#[cfg(target_arch = "x86_64")]
fn horizontal_simd<const C: usize>(tmp: &[f32], row: usize, across: &[Taps], out: &mut [u8]) {
    const { assert!(C <= 4) };
    if std::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU has AVX (checked just above).
        return unsafe { horizontal_avx::<C>(tmp, row, across, out) };
    }
    let nw = across.len();
    for (line, dst) in tmp.chunks_exact(row).zip(out.chunks_exact_mut(nw * C)) {
        for (t, px) in across.iter().zip(dst.chunks_exact_mut(C)) {
            pixel_sse::<C>(line, t, px);
        }
    }
}

/// Whether the 4-float loads of `t`'s taps stay inside `line`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn loads_fit<const C: usize>(line: &[f32], t: &Taps) -> bool {
    (t.left + t.weights.len() - 1) * C + 4 <= line.len()
}

/// One output pixel: an SSE vector where its loads fit, else [`pixel_scalar`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn pixel_sse<const C: usize>(line: &[f32], t: &Taps, px: &mut [u8]) {
    use std::arch::x86_64::*;
    if !loads_fit::<C>(line, t) {
        return pixel_scalar::<C>(line, t, px);
    }
    // SAFETY: SSE2 is part of x86_64; each load reads 4 floats of `line` from
    // (left + i)·C for i below the tap count, inside `line` (`loads_fit`).
    let lanes = unsafe {
        let p = line.as_ptr().add(t.left * C);
        let mut acc = _mm_setzero_ps();
        for (i, &wt) in t.weights.iter().enumerate() {
            let v = _mm_loadu_ps(p.add(i * C));
            acc = _mm_add_ps(acc, _mm_mul_ps(v, _mm_set1_ps(wt)));
        }
        // `to_u8` on four lanes: clamp, truncate, add 1 where the remainder is ≥ ½.
        let x = _mm_min_ps(_mm_max_ps(acc, _mm_setzero_ps()), _mm_set1_ps(255.0));
        let i = _mm_cvttps_epi32(x);
        let r = _mm_sub_ps(x, _mm_cvtepi32_ps(i));
        let up = _mm_and_si128(
            _mm_castps_si128(_mm_cmpge_ps(r, _mm_set1_ps(0.5))),
            _mm_set1_epi32(1),
        );
        let mut lanes = [0i32; 4];
        _mm_storeu_si128(lanes.as_mut_ptr().cast(), _mm_add_epi32(i, up));
        lanes
    };
    for ch in 0..C {
        px[ch] = lanes[ch] as u8;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn horizontal_avx<const C: usize>(tmp: &[f32], row: usize, across: &[Taps], out: &mut [u8]) {
    use std::arch::x86_64::*;
    let nw = across.len();
    for (line, dst) in tmp.chunks_exact(row).zip(out.chunks_exact_mut(nw * C)) {
        let mut x = 0;
        while x < nw {
            let a = &across[x];
            let pair = across.get(x + 1).filter(|b| {
                b.weights.len() == a.weights.len()
                    && loads_fit::<C>(line, a)
                    && loads_fit::<C>(line, b)
            });
            let Some(b) = pair else {
                pixel_sse::<C>(line, a, &mut dst[x * C..(x + 1) * C]);
                x += 1;
                continue;
            };
            // SAFETY: AVX is enabled for this function; the loads stay inside `line` for
            // both pixels (`loads_fit`), as in `pixel_sse`.
            let lanes = unsafe {
                let (pa, pb) = (line.as_ptr().add(a.left * C), line.as_ptr().add(b.left * C));
                let mut acc = _mm256_setzero_ps();
                for (i, (&wa, &wb)) in a.weights.iter().zip(&b.weights).enumerate() {
                    let v =
                        _mm256_set_m128(_mm_loadu_ps(pb.add(i * C)), _mm_loadu_ps(pa.add(i * C)));
                    let w = _mm256_set_m128(_mm_set1_ps(wb), _mm_set1_ps(wa));
                    acc = _mm256_add_ps(acc, _mm256_mul_ps(v, w));
                }
                let v = _mm256_min_ps(
                    _mm256_max_ps(acc, _mm256_setzero_ps()),
                    _mm256_set1_ps(255.0),
                );
                let i = _mm256_cvttps_epi32(v);
                let r = _mm256_sub_ps(v, _mm256_cvtepi32_ps(i));
                let up = _mm256_cmp_ps::<_CMP_GE_OQ>(r, _mm256_set1_ps(0.5));
                // AVX (not AVX2) has no 256-bit integer add: the rounding adds 1.0 in floats
                // to the truncated value (exact for values up to 255) and converts back.
                let f = _mm256_add_ps(
                    _mm256_cvtepi32_ps(i),
                    _mm256_and_ps(up, _mm256_set1_ps(1.0)),
                );
                let mut lanes = [0i32; 8];
                _mm256_storeu_si256(lanes.as_mut_ptr().cast(), _mm256_cvttps_epi32(f));
                lanes
            };
            for ch in 0..C {
                dst[x * C + ch] = lanes[ch] as u8;
                dst[(x + 1) * C + ch] = lanes[4 + ch] as u8;
            }
            x += 2;
        }
    }
}

/// Clamped to [0, 255] and rounded half away from zero, as `image` does (`f32::round`). Without
/// SSE4.1 `round` is a call into libm (12 % of a resize's time); for x in [0, 255] its
/// integer part by truncation and the exact remainder give the same result.
fn to_u8(x: f32) -> u8 {
    let x = x.clamp(0.0, 255.0);
    let i = x as u32;
    (i + u32::from(x - i as f32 >= 0.5)) as u8
}

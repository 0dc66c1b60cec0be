//! The peak arithmetic rate of the device a speed figure was measured on, so that every
//! achieved GFLOP/s has a denominator: for the CPU a short built-in probe of the cores
//! used, for NVIDIA GPUs the CUDA core count and maximum SM clock NVML reports, for an NPU
//! the figure a profile states. Owns the probe and the rule; the share of the peak is
//! computed by `measure::bench`.
//!
//! The CPU probe is the rate the cores reach on fused multiply-adds, the instruction a
//! GEMM kernel's inner loop is made of: each of the `threads` threads runs 16 independent
//! chains of the widest FMA this CPU has (AVX-512, AVX2+FMA, NEON, else scalar
//! `mul_add`) on registers, long enough (~60 ms) for the clock to settle under load; the
//! best of three rounds counts, FLOPs = 2 × lanes × FMAs. No real GEMM can exceed it on
//! these cores, so achieved / peak is an honest share. It is measured once per thread
//! count per process.

use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

pub use crate::report::schema::bench::Peak;

use crate::backend::BackendSpec;

/// Independent FMA chains per thread: enough to cover the FMA latency (4 cycles) times
/// the FMA ports (2) with room, few enough to stay in registers (AVX2 has 16 of them, so
/// it runs 12).
const CHAINS: usize = 16;
const CHAINS_AVX2: usize = 12;

/// How long one round of the probe runs.
const ROUND: Duration = Duration::from_millis(60);

/// The peak that applies to `spec` running on `threads` CPU threads.
pub fn for_backend(spec: &BackendSpec, threads: usize, npu_peak_gflops: Option<f64>) -> Peak {
    use crate::backend::PeakSource;
    match crate::backend::describe_spec(spec).peak {
        PeakSource::CpuFma => cpu(threads),
        PeakSource::NvidiaGpu => nvidia(spec.device.unwrap_or(0)),
        PeakSource::Stated => match npu_peak_gflops {
            Some(g) => Peak {
                gflop_per_s: Some(g),
                device: format!("NPU {}", spec.device.unwrap_or(0)),
                method: "stated by the profile ([speed] peak_gflops)".into(),
                unavailable: None,
            },
            None => unknown(
                format!("NPU {}", spec.device.unwrap_or(0)),
                "the NPU's peak is not measured; a profile may state it ([speed] peak_gflops)",
            ),
        },
        PeakSource::Unknown(why) => unknown(spec.to_string(), why),
    }
}

fn unknown(device: String, why: &str) -> Peak {
    Peak {
        gflop_per_s: None,
        device,
        method: String::new(),
        unavailable: Some(why.to_string()),
    }
}

/// The FMA peak of `threads` CPU threads (cached per thread count for the process).
pub fn cpu(threads: usize) -> Peak {
    static CACHE: Mutex<Vec<(usize, Peak)>> = Mutex::new(Vec::new());
    let threads = threads.max(1);
    if crate::util::build_info::OPT_LEVEL == "0" {
        // Unoptimised, the probe's vectors live in memory, not registers: measured here
        // (2-core EPYC, AVX2) 1.8 GFLOP/s against 75.7 at opt-level 1, which put a
        // yolov8s run at 2,539 % of its "peak". No figure beats a wrong one.
        return unknown(
            format!(
                "CPU, {threads} thread{}",
                if threads == 1 { "" } else { "s" }
            ),
            "the CPU's FMA peak is not measured by an unoptimised (debug) build of acceval: \
             its probe would count memory traffic, not FMAs; build with `cargo build --release`",
        );
    }
    if let Ok(c) = CACHE.lock()
        && let Some((_, p)) = c.iter().find(|(t, _)| *t == threads)
    {
        return p.clone();
    }
    let p = probe(threads);
    if let Ok(mut c) = CACHE.lock() {
        c.push((threads, p.clone()));
    }
    p
}

/// Runs the FMA probe on `threads` threads (three rounds, the best counts).
fn probe(threads: usize) -> Peak {
    let (isa, chains, lanes, kernel) = best_kernel();
    let best = (0..3)
        .map(|_| round(threads, kernel, chains * lanes))
        .fold(0.0f64, f64::max);
    Peak {
        gflop_per_s: (best > 0.0).then_some(best),
        device: format!(
            "CPU, {threads} thread{}",
            if threads == 1 { "" } else { "s" }
        ),
        method: format!(
            "built-in FMA probe: {threads} thread{} × {chains} independent {isa} fused multiply-add chains ({lanes} FP32 lanes) on registers, {} ms rounds, best of 3; FLOPs = 2 × lanes × FMAs: the most a GEMM kernel can reach on these cores at the clock they run under load",
            if threads == 1 { "" } else { "s" },
            ROUND.as_millis()
        ),
        unavailable: None,
    }
}

/// A kernel: runs `iters` iterations of one FMA per chain and lane; returns the sum of
/// every chain's lanes (so nothing is optimised away).
type Kernel = fn(u64) -> f32;

/// One round: calibrates the iteration count to `ROUND` on one thread, then runs it on
/// `threads` threads started together. GFLOP/s over the wall time of the slowest;
/// `fmas` = FMAs per iteration (chains × lanes).
fn round(threads: usize, kernel: Kernel, fmas: usize) -> f64 {
    let mut iters: u64 = 1 << 14;
    loop {
        let t = Instant::now();
        std::hint::black_box(kernel(iters));
        let e = t.elapsed();
        if e >= ROUND / 8 || iters > 1 << 40 {
            let per_iter = e.as_secs_f64() / iters as f64;
            iters = ((ROUND.as_secs_f64() / per_iter.max(1e-12)) as u64).max(1);
            break;
        }
        iters *= 4;
    }
    let barrier = Arc::new(Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let b = Arc::clone(&barrier);
            std::thread::spawn(move || {
                b.wait();
                std::hint::black_box(kernel(iters));
                b.wait();
            })
        })
        .collect();
    barrier.wait();
    let t = Instant::now();
    barrier.wait();
    let wall = t.elapsed().as_secs_f64();
    for h in handles {
        let _ = h.join();
    }
    let flops = 2.0 * fmas as f64 * iters as f64 * threads as f64;
    if wall > 0.0 { flops / wall / 1e9 } else { 0.0 }
}

/// The widest FMA this CPU executes: `(name, chains, FP32 lanes, kernel)`.
fn best_kernel() -> (&'static str, usize, usize, Kernel) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return ("AVX-512", CHAINS, 16, x86::avx512);
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return ("AVX2 FMA", CHAINS_AVX2, 8, x86::avx2);
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        return ("NEON", CHAINS, 4, arm::neon);
    }
    #[allow(unreachable_code)]
    ("scalar mul_add", CHAINS, 1, scalar)
}

fn scalar(iters: u64) -> f32 {
    let mut acc = [0.0f32; CHAINS];
    for (i, a) in acc.iter_mut().enumerate() {
        *a = i as f32;
    }
    let (x, y) = (
        std::hint::black_box(0.999_999f32),
        std::hint::black_box(1e-7f32),
    );
    for _ in 0..iters {
        for a in acc.iter_mut() {
            *a = a.mul_add(x, y);
        }
    }
    acc.iter().sum()
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{CHAINS, CHAINS_AVX2};
    use std::arch::x86_64::*;

    pub fn avx512(iters: u64) -> f32 {
        // SAFETY: chosen only when `is_x86_feature_detected!("avx512f")` holds.
        unsafe { avx512_inner(iters) }
    }

    #[target_feature(enable = "avx512f")]
    unsafe fn avx512_inner(iters: u64) -> f32 {
        let x = _mm512_set1_ps(std::hint::black_box(0.999_999));
        let y = _mm512_set1_ps(std::hint::black_box(1e-7));
        let mut acc = [_mm512_setzero_ps(); CHAINS];
        for (i, a) in acc.iter_mut().enumerate() {
            *a = _mm512_set1_ps(i as f32);
        }
        for _ in 0..iters {
            for a in acc.iter_mut() {
                *a = _mm512_fmadd_ps(*a, x, y);
            }
        }
        let mut s = _mm512_setzero_ps();
        for a in acc {
            s = _mm512_add_ps(s, a);
        }
        _mm512_reduce_add_ps(s)
    }

    pub fn avx2(iters: u64) -> f32 {
        // SAFETY: chosen only when avx2 and fma are detected.
        unsafe { avx2_inner(iters) }
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2_inner(iters: u64) -> f32 {
        let x = _mm256_set1_ps(std::hint::black_box(0.999_999));
        let y = _mm256_set1_ps(std::hint::black_box(1e-7));
        let mut acc = [_mm256_setzero_ps(); CHAINS_AVX2];
        for (i, a) in acc.iter_mut().enumerate() {
            *a = _mm256_set1_ps(i as f32);
        }
        for _ in 0..iters {
            for a in acc.iter_mut() {
                *a = _mm256_fmadd_ps(*a, x, y);
            }
        }
        let mut s = _mm256_setzero_ps();
        for a in acc {
            s = _mm256_add_ps(s, a);
        }
        let mut out = [0.0f32; 8];
        // SAFETY: `out` holds the 8 lanes.
        unsafe { _mm256_storeu_ps(out.as_mut_ptr(), s) };
        out.iter().sum()
    }
}

#[cfg(target_arch = "aarch64")]
mod arm {
    use super::CHAINS;
    use std::arch::aarch64::*;

    pub fn neon(iters: u64) -> f32 {
        // SAFETY: NEON is part of the aarch64 baseline.
        unsafe {
            let x = vdupq_n_f32(std::hint::black_box(0.999_999));
            let y = vdupq_n_f32(std::hint::black_box(1e-7));
            let mut acc = [vdupq_n_f32(0.0); CHAINS];
            for (i, a) in acc.iter_mut().enumerate() {
                *a = vdupq_n_f32(i as f32);
            }
            for _ in 0..iters {
                for a in acc.iter_mut() {
                    *a = vfmaq_f32(y, *a, x);
                }
            }
            let mut s = vdupq_n_f32(0.0);
            for a in acc {
                s = vaddq_f32(s, a);
            }
            vaddvq_f32(s)
        }
    }
}

/// The FP32 peak of NVIDIA GPU `index`: CUDA cores × 2 FLOP (one FMA) × the maximum SM
/// clock, as NVML reports them (tensor cores excluded).
pub fn nvidia(index: u32) -> Peak {
    use nvml_wrapper::{Nvml, enum_wrappers::device::Clock};
    let device = format!("GPU {index}");
    let nvml = match Nvml::init() {
        Ok(n) => n,
        Err(e) => {
            return unknown(
                device,
                &format!("NVML cannot be loaded ({e}): no NVIDIA driver on this machine"),
            );
        }
    };
    let d = match nvml.device_by_index(index) {
        Ok(d) => d,
        Err(e) => return unknown(device, &format!("NVML has no GPU {index}: {e}")),
    };
    let name = d.name().unwrap_or_default();
    match (d.num_cores(), d.max_clock_info(Clock::SM)) {
        (Ok(cores), Ok(mhz)) => Peak {
            gflop_per_s: Some(cores as f64 * 2.0 * mhz as f64 / 1e3),
            device: format!("{device} {name}"),
            method: format!(
                "NVML: {cores} CUDA cores × 2 FLOP (FMA) × {mhz} MHz maximum SM clock: the FP32 peak without tensor cores"
            ),
            unavailable: None,
        },
        (c, m) => unknown(
            format!("{device} {name}"),
            &format!(
                "NVML did not report the core count ({}) or the maximum SM clock ({})",
                c.map_or_else(|e| e.to_string(), |v| v.to_string()),
                m.map_or_else(|e| e.to_string(), |v| v.to_string())
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_compute_the_same_chains() {
        // 3 iterations of a = a·x + y from a_i = i, summed over chains and lanes.
        let want = |chains: usize, lanes: usize| -> f64 {
            (0..chains)
                .map(|i| {
                    let mut a = i as f64;
                    for _ in 0..3 {
                        a = a * 0.999_999 + 1e-7;
                    }
                    a * lanes as f64
                })
                .sum()
        };
        let (_, chains, lanes, k) = best_kernel();
        let (got, w) = (k(3) as f64, want(chains, lanes));
        assert!((got - w).abs() < 1e-3 * w, "{got} vs {w}");
        let (s, w) = (scalar(3) as f64, want(CHAINS, 1));
        assert!((s - w).abs() < 1e-3 * w, "{s} vs {w}");
    }

    #[test]
    fn the_cpu_peak_is_positive_and_cached() {
        let p = probe(1);
        assert!(p.gflop_per_s.is_some_and(|g| g > 0.1), "{p:?}");
        assert!(p.method.contains("FMA"));
        let p = cpu(1);
        if crate::util::build_info::OPT_LEVEL == "0" {
            // An unoptimised build names the release build instead of a wrong peak.
            assert!(p.gflop_per_s.is_none(), "{p:?}");
            assert!(p.unavailable.as_deref().unwrap().contains("--release"));
        } else {
            assert!(p.gflop_per_s.is_some_and(|g| g > 0.1), "{p:?}");
        }
        assert_eq!(cpu(1).gflop_per_s, p.gflop_per_s);
    }

    #[test]
    fn backends_map_to_their_device() {
        let spec = |s: &str| s.parse::<BackendSpec>().unwrap();
        assert!(for_backend(&spec("mock"), 1, None).unavailable.is_some());
        let npu = for_backend(&spec("ort:cann"), 1, Some(256.0));
        assert_eq!(npu.gflop_per_s, Some(256.0));
        assert!(
            for_backend(&spec("ort:cann"), 1, None)
                .unavailable
                .is_some()
        );
        let gpu = for_backend(&spec("ort:cuda"), 1, None);
        assert!(gpu.device.starts_with("GPU 0"), "{gpu:?}");
    }
}

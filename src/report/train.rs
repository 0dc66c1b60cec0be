//! Views of a `train` result: the terminal text (figures and the epoch table) and the
//! epoch table as CSV (`epochs.csv`).

use std::io::Write;

use super::export::{Document, Table};
use super::{right, table};
use crate::report::schema::train::{Measured, TrainReport};

fn f(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// The epoch table.
pub fn epochs_table(r: &TrainReport) -> Table {
    let mut t = Table::new(
        "epochs.csv",
        &[
            "epoch",
            "time_s",
            "samples",
            "throughput_samples_per_s",
            "utilization_mean_pct",
            "utilization_max_pct",
            "utilization_n",
            "energy_j",
            "loss",
            "eval_metric",
            "eval_value",
            "eval_at_s",
        ],
    );
    for e in &r.epochs {
        t.push(vec![
            e.index.to_string(),
            format!("{:.6}", e.time_s),
            e.samples.to_string(),
            format!("{:.6}", e.throughput_samples_per_s),
            e.utilization.mean.to_string(),
            e.utilization.max.to_string(),
            e.utilization.n.to_string(),
            e.energy_j.to_string(),
            e.loss.map(|l| format!("{l:.6}")).unwrap_or_default(),
            e.eval
                .as_ref()
                .map(|v| v.metric.clone())
                .unwrap_or_default(),
            e.eval
                .as_ref()
                .map(|v| format!("{:.6}", v.value))
                .unwrap_or_default(),
            e.eval
                .as_ref()
                .map(|v| format!("{:.3}", v.at_s))
                .unwrap_or_default(),
        ]);
    }
    t
}

/// A figure in the terminal's epoch table: the value, or "n/a" when the figures above (and
/// the JSON and CSV) give the reason, so one long reason does not widen every row.
fn cell(v: &Measured) -> String {
    match v {
        Measured::Value(x) => f(*x),
        Measured::Missing(_) => "n/a (above)".into(),
    }
}

/// A count (the batch) without decimals.
fn whole(v: &Measured) -> String {
    match v {
        Measured::Value(x) if x.fract() == 0.0 => format!("{x:.0}"),
        _ => v.to_string(),
    }
}

fn line(o: &mut dyn Write, name: &str, v: &Measured, unit: &str) -> std::io::Result<()> {
    match v {
        Measured::Value(x) => writeln!(o, "  {name:<34} {} {unit}", f(*x)),
        Measured::Missing(_) => writeln!(o, "  {name:<34} {v}"),
    }
}

impl Document for TrainReport {
    fn write_text(&self, o: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            o,
            "Training (§7.1, optional in the draft) — {} ({}), {} on {}, precision {}, batch {}",
            self.workload,
            self.framework,
            self.mode_word(),
            self.device,
            self.precision,
            whole(&self.batch)
        )?;
        if !self.complete {
            writeln!(
                o,
                "INCOMPLETE: {}",
                self.error.as_deref().unwrap_or("the run did not finish")
            )?;
        }
        writeln!(
            o,
            "  {:<34} {} s",
            "total time Te − Ts (§7.1.3 b)",
            f(self.total_s)
        )?;
        match &self.step_ms {
            Some(s) => writeln!(
                o,
                "  {:<34} avg {} min {} max {} p50 {} p75 {} p90 {} p99 {} ms (n {}, {} warm-up apart)",
                "single step T1 − T0 (§7.1.3 a)",
                f(s.average),
                f(s.min),
                f(s.max),
                f(s.p50),
                f(s.p75),
                f(s.p90),
                f(s.p99),
                s.n,
                self.warmup_steps
            )?,
            None => writeln!(
                o,
                "  {:<34} n/a: no timed step",
                "single step T1 − T0 (§7.1.3 a)"
            )?,
        }
        line(
            o,
            "throughput (§7.1.5)",
            &self.throughput_samples_per_s,
            "samples/s",
        )?;
        line(o, "throughput, input", &self.throughput_mb_per_s, "MB/s")?;
        line(o, "time to target (§7.1.3)", &self.time_to_target_s, "s")?;
        line(o, "epochs to target", &self.epochs_to_target, "")?;
        line(o, "power, average (§7.1.6)", &self.power_w.average, "W")?;
        line(o, "power, peak (§7.1.6)", &self.power_w.peak, "W")?;
        line(o, "energy", &self.energy_j, "J")?;
        line(
            o,
            "efficiency N/E (§7.1.7)",
            &self.efficiency_samples_per_j,
            "samples/J",
        )?;
        if let Some(h) = &self.held_out {
            writeln!(
                o,
                "  {:<34} {} {} vs {} {} ({}, {} samples)",
                "held out",
                h.metric,
                f(h.value),
                h.baseline,
                f(h.baseline_value),
                if h.beats_baseline {
                    "beats it"
                } else {
                    "does NOT beat it"
                },
                h.samples
            )?;
        }
        self.write_epochs(o)?;
        writeln!(o, "Utilization channel: {}", self.utilization_channel)?;
        writeln!(o, "{}", self.standard_note)?;
        Ok(())
    }
    fn tables(&self) -> Vec<Table> {
        vec![epochs_table(self)]
    }
    fn json_name(&self) -> &'static str {
        "train.json"
    }
}

impl TrainReport {
    /// The epoch table and the peak-power sweep, in the terminal.
    fn write_epochs(&self, o: &mut dyn Write) -> std::io::Result<()> {
        let mut t = table(&[
            "epoch",
            "time s",
            "samples",
            "samples/s",
            "util mean %",
            "util max %",
            "util n",
            "energy J",
            "loss",
            "eval",
        ]);
        for e in &self.epochs {
            t.add_row(vec![
                e.index.to_string(),
                f(e.time_s),
                e.samples.to_string(),
                f(e.throughput_samples_per_s),
                cell(&e.utilization.mean),
                cell(&e.utilization.max),
                e.utilization.n.to_string(),
                cell(&e.energy_j),
                e.loss.map(|l| format!("{l:.5}")).unwrap_or_default(),
                e.eval
                    .as_ref()
                    .map(|v| format!("{} {:.4}", v.metric, v.value))
                    .unwrap_or_default(),
            ]);
        }
        right(&mut t, &[0, 1, 2, 3, 4, 5, 6, 7, 8]);
        writeln!(o, "{t}")?;
        for p in &self.peak_power_sweep {
            writeln!(
                o,
                "  peak-power sweep (§7.1.6 b): batch {} {} samples/s, max power {}",
                p.batch,
                f(p.samples_per_s),
                cell(&p.max_power_w)
            )?;
        }
        if let Some(why) = &self.peak_power_sweep_stop {
            writeln!(o, "  the sweep stopped: {why}")?;
        }
        Ok(())
    }

    fn mode_word(&self) -> &'static str {
        match self.mode {
            crate::report::schema::train::TrainMode::Builtin => "built-in workload",
            crate::report::schema::train::TrainMode::Exec => "the lab's script",
        }
    }
}

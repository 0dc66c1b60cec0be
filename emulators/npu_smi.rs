//! A stand-in for Ascend's `npu-smi` with the output formats acceval parses when DCMI
//! cannot be loaded: `npu-smi info` (the two-line-per-chip table), `npu-smi info -l` (the
//! NPU list) and `npu-smi info -t power -i ID`. Its values follow the same ramps as the DCMI
//! emulator (the `DCMI_FAKE_*` variables), and its version line says "acceval emulator".

#[path = "common.rs"]
mod common;

use common::Ramp;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let power = Ramp::from_env("DCMI_FAKE_POWER", "DCMI_FAKE_T0", 80.0, 2.0, 310.0);
    let util = Ramp::from_env("DCMI_FAKE_UTIL", "DCMI_FAKE_T0", 20.0, 5.0, 100.0);
    let cards = common::env_u64("DCMI_FAKE_CARDS", 1);
    let chip = std::env::var("DCMI_FAKE_CHIP").unwrap_or_else(|_| "910B3".into());
    let hbm_used = common::env_u64("DCMI_FAKE_HBM_USED_MB", 3277);
    if std::env::var("NPU_SMI_FAKE_FAIL").is_ok() {
        eprintln!("dcmi module initialize failed. ret is -8005");
        std::process::exit(255);
    }
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    match a.as_slice() {
        ["info"] => {
            println!(
                "+------------------------------------------------------------------------------------------------+"
            );
            println!(
                "| npu-smi 24.1.rc2 (acceval emulator)       Version: 24.1.rc2                                      |"
            );
            println!(
                "+---------------------------+---------------+----------------------------------------------------+"
            );
            println!(
                "| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|"
            );
            println!(
                "| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |"
            );
            println!(
                "+===========================+===============+====================================================+"
            );
            for i in 0..cards {
                let u = util.now();
                println!(
                    "| {i:<5} {chip:<19} | OK            | {:<11.1} {:<17} 0    / 0             |",
                    power.now(),
                    (40.0 + u / 5.0).round()
                );
                println!(
                    "| 0                         | 0000:{:02X}:00.0  | {:<11} 0    / 0          {hbm_used:>5}/ 65536         |",
                    0xC1 + i,
                    u.round()
                );
                println!(
                    "+===========================+===============+====================================================+"
                );
            }
        }
        ["info", "-l"] => {
            println!("\tTotal Count                    : {cards}");
            for i in 0..cards {
                println!();
                println!("\tNPU ID                         : {i}");
                println!("\tProduct Name                   : Atlas 800I A2 (acceval emulator)");
                println!("\tChip Count                     : 1");
            }
        }
        ["info", "-t", "power", "-i", id] => {
            if id.parse::<u64>().map_or(true, |i| i >= cards) {
                eprintln!(
                    "Usage: npu-smi info <watch|proc|-h|-m|-l|-t type> [Options...]\nThe device id is invalid."
                );
                std::process::exit(255);
            }
            println!("\tNPU Real-time Power(W)         : {:.1}", power.now());
        }
        _ => {
            eprintln!(
                "Usage: npu-smi info [-l | -t power -i ID] (acceval emulator: those forms only)"
            );
            std::process::exit(255);
        }
    }
}

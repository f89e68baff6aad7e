//! `nesle-romtest`: runs NES test ROMs and prints one verdict line per ROM.
//!
//! ```text
//! nesle-romtest [--protocol auto|status6000|zp-f8|zp-f0|screen|holy-diver|nestest|klaus]
//!               [--max-frames N] [--press BUTTONS@FROM[-UNTIL]] [--dump-ram] ROM...
//! ```
//! Prints `PASS|FAIL|TIMEOUT <path> <message>` per ROM, then `N passed, N failed`, and exits
//! non-zero if any ROM did not pass. Buttons are names joined by `+` (A, B, SELECT, START,
//! UP, DOWN, LEFT, RIGHT), e.g. `--press START@40-45` or `--press B@0-100000` (held from power-on).

use std::path::PathBuf;
use std::process::ExitCode;

use nes_core::controller;
use nes_core::testrom::{run_file, Options, Press, Protocol, Verdict};

const USAGE: &str = "usage: nesle-romtest [--protocol auto|status6000|zp-f8|zp-f0|screen|holy-diver|nestest|klaus] \
[--max-frames N] [--press BUTTONS@FROM[-UNTIL]] [--dump-ram] ROM...";

fn parse_buttons(s: &str) -> Result<u8, String> {
    let mut mask = 0u8;
    for name in s.split('+') {
        mask |= match name.to_ascii_uppercase().as_str() {
            "A" => controller::A,
            "B" => controller::B,
            "SELECT" => controller::SELECT,
            "START" => controller::START,
            "UP" => controller::UP,
            "DOWN" => controller::DOWN,
            "LEFT" => controller::LEFT,
            "RIGHT" => controller::RIGHT,
            other => return Err(format!("unknown button '{other}'")),
        };
    }
    Ok(mask)
}

fn parse_press(s: &str) -> Result<Press, String> {
    let (buttons, when) = s.split_once('@').ok_or_else(|| format!("--press wants BUTTONS@FRAME, got '{s}'"))?;
    let buttons = parse_buttons(buttons)?;
    let frame = |f: &str| f.parse::<u64>().map_err(|_| format!("bad frame number '{f}'"));
    let (from, until) = match when.split_once('-') {
        Some((a, b)) => (frame(a)?, frame(b)?),
        None => {
            let a = frame(when)?;
            (a, a.saturating_add(5))
        }
    };
    if until <= from {
        return Err(format!("--press {s}: the frames run from {from} up to, not including, {until}: none"));
    }
    Ok(Press { buttons, from, until })
}

fn main() -> ExitCode {
    let mut opts = Options::default();
    let mut dump_ram = false;
    let mut roms: Vec<PathBuf> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        let parsed: Result<(), String> = match arg.as_str() {
            "--protocol" => value("--protocol").and_then(|v| {
                opts.protocol = Protocol::parse(&v).ok_or_else(|| format!("unknown protocol '{v}'"))?;
                Ok(())
            }),
            "--max-frames" => value("--max-frames").and_then(|v| {
                opts.max_frames = v.parse().map_err(|_| format!("bad --max-frames '{v}'"))?;
                Ok(())
            }),
            "--press" => value("--press").and_then(|v| {
                opts.presses.push(parse_press(&v)?);
                Ok(())
            }),
            "--dump-ram" => {
                dump_ram = true;
                Ok(())
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            s if s.starts_with("--") => Err(format!("unknown option '{s}'")),
            _ => {
                roms.push(PathBuf::from(arg));
                Ok(())
            }
        };
        if let Err(e) = parsed {
            eprintln!("nesle-romtest: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    }
    if roms.is_empty() {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    }
    let (mut passed, mut failed) = (0, 0);
    for rom in &roms {
        let out = run_file(rom, &opts);
        println!("{} {} {}", out.verdict.label(), rom.display(), out.message);
        if dump_ram && !out.ram.is_empty() {
            for (i, chunk) in out.ram.chunks(16).enumerate() {
                let hex: Vec<String> = chunk.iter().map(|b| format!("{b:02x}")).collect();
                println!("  {:04x}: {}", i * 16, hex.join(" "));
            }
        }
        if out.verdict == Verdict::Pass {
            passed += 1;
        } else {
            failed += 1;
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_press_is_a_range_of_frames_or_five_from_one() {
        let p = parse_press("START@40-45").unwrap();
        assert_eq!((p.buttons, p.from, p.until), (controller::START, 40, 45));
        let p = parse_press("A+B@7").unwrap();
        assert_eq!((p.from, p.until), (7, 12));
        // Five frames from the last one there is: none to hold it in, not an overflow.
        assert!(parse_press(&format!("A@{}", u64::MAX)).is_err());
        assert_eq!(parse_press(&format!("A@{}", u64::MAX - 9)).unwrap().until, u64::MAX - 4);
    }

    #[test]
    fn a_press_of_no_frames_is_refused() {
        assert!(parse_press("START@50-40").unwrap_err().contains("none"));
        assert!(parse_press("START@50-50").is_err());
        assert!(parse_press("START@x").is_err() && parse_press("START").is_err());
    }
}

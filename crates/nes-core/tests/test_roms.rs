//! Every ROM in the shared test-ROM folder, judged by the protocol its MANIFEST.tsv names,
//! printed as one table. A ROM that cannot pass yet must be listed in `KNOWN_FAILURES` with
//! the reason; it still runs, and the test fails if it starts passing (so the list stays true).
//!
//! The folder is `../shared/test-roms` beside the repository (override: `NESLE_TEST_ROMS`).
//! A missing folder fails the test: CI must run the ROMs.

use std::path::PathBuf;

use nes_core::testrom::{run_file, Options, Protocol, Verdict};

/// (path in the manifest, why it fails).
const KNOWN_FAILURES: &[(&str, &str)] = &[(
    "mappers/mmc3_test_2/rom_singles/6-MMC3_alt.nes",
    "tests the alternate MMC3 revision; nesle models the common one, which 5-MMC3.nes checks",
)];

fn rom_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("NESLE_TEST_ROMS") {
        return PathBuf::from(dir);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/test-roms")
}

#[test]
fn every_test_rom_gives_its_expected_verdict() {
    let dir = rom_dir();
    let manifest = std::fs::read_to_string(dir.join("MANIFEST.tsv"))
        .unwrap_or_else(|e| panic!("test ROMs missing at {}: {e}", dir.display()));
    let mut unexpected = Vec::new();
    let mut table = String::new();
    let (mut passed, mut known, mut total) = (0, 0, 0);
    for line in manifest.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        let (path, protocol) = (cols[0], cols[cols.len() - 1]);
        let Some(protocol) = Protocol::parse(protocol) else {
            unexpected.push(format!("{path}: unknown protocol {protocol}"));
            continue;
        };
        total += 1;
        let opts = Options { protocol, max_frames: 3600, ..Options::default() };
        let out = run_file(&dir.join(path), &opts);
        let known_reason = KNOWN_FAILURES.iter().find(|(p, _)| *p == path).map(|(_, why)| *why);
        let mark = match (out.verdict, known_reason) {
            (Verdict::Pass, None) => {
                passed += 1;
                "ok"
            }
            (Verdict::Pass, Some(_)) => {
                unexpected.push(format!("{path} now passes: remove it from KNOWN_FAILURES"));
                "UNEXPECTED PASS"
            }
            (_, Some(_)) => {
                known += 1;
                "known failure"
            }
            (_, None) => {
                unexpected.push(format!("{path}: {} {}", out.verdict.label(), out.message));
                "UNEXPECTED"
            }
        };
        let msg: String = out.message.chars().take(90).collect();
        table.push_str(&format!("{:<8} {:<15} {:<58} {}\n", out.verdict.label(), mark, path, msg));
        if let Some(why) = known_reason {
            table.push_str(&format!("         {:<15} reason: {why}\n", ""));
        }
    }
    println!(
        "\n{table}\ntest ROMs: {passed} passed, {known} known failures, {} unexpected, of {total}",
        unexpected.len()
    );
    assert!(unexpected.is_empty(), "unexpected test-ROM results:\n{}", unexpected.join("\n"));
}

#[test]
fn nestest_passes_only_with_a_log_that_runs_to_the_tests_end() {
    let dir = rom_dir().join("cpu/nestest");
    let rom = std::fs::read(dir.join("nestest.nes")).expect("nestest.nes");
    let log = std::fs::read_to_string(dir.join("nestest.log")).expect("nestest.log");
    let whole = nes_core::testrom::run_nestest(&rom, &log);
    assert_eq!(whole.verdict, Verdict::Pass, "{}", whole.message);
    // Cut short, the test stops before it writes any error code: $02 and $03 still read 0.
    let lines: Vec<&str> = log.lines().collect();
    for keep in [0, 100, lines.len() - 1] {
        let cut = nes_core::testrom::run_nestest(&rom, &lines[..keep].join("\n"));
        assert_eq!(cut.verdict, Verdict::Fail, "{keep} lines: {}", cut.message);
        assert!(cut.message.contains("before the test's last RTS"), "{}", cut.message);
    }
}

//! Running test ROMs and reading their verdicts (the protocols of the public NES test suites).
//!
//! A runner knows ROMs only by how they report, never by name:
//! - `status6000`: blargg's 2009+ shell: `$6001-$6003 = DE B0 61`, then `$6000` < $80 is the
//!   result (0 = pass), `$81` asks for a reset; `$6004...` holds the printed text.
//! - `zp-f8` / `zp-f0`: blargg's 2005 tests: a result byte in page zero (1 = pass), read once
//!   the ROM parks in a `JMP *` loop with interrupts masked.
//! - `screen`: text written as ASCII tiles into the nametable; "PASSED"/"Passed" vs "FAIL"/"Error".
//! - `holy-diver`: the Holy Diver Batman board report (rows 4-8 of nametable $2000).
//! - `nestest`: automation mode compared line by line with `nestest.log` next to the ROM.
//! - `klaus`: the 6502 functional test on a flat 64 KiB memory, success trap at $3469.
//! - `auto`: `status6000` if the signature appears, else `screen` once the ROM parks.

use std::format;
use std::path::Path;
use std::string::{String, ToString};
use std::vec::Vec;

use crate::console::Console;
use crate::cpu::{Cpu, CpuBus};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Auto,
    Status6000,
    ZpF8,
    ZpF0,
    Screen,
    HolyDiver,
    Nestest,
    Klaus,
}

impl Protocol {
    pub fn parse(s: &str) -> Option<Protocol> {
        Some(match s {
            "auto" => Protocol::Auto,
            "status6000" | "status6000+reset" => Protocol::Status6000,
            "zp-f8" | "zp-result-F8" => Protocol::ZpF8,
            "zp-f0" | "zp-result-F0" => Protocol::ZpF0,
            "screen" | "screen-text" => Protocol::Screen,
            "holy-diver" | "holy-diver-screen" => Protocol::HolyDiver,
            "nestest" => Protocol::Nestest,
            "klaus" | "klaus-trap" => Protocol::Klaus,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    Timeout,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Timeout => "TIMEOUT",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub verdict: Verdict,
    pub message: String,
    pub frames: u64,
    /// CPU RAM at the end (empty for protocols without a console).
    pub ram: Vec<u8>,
}

/// A button press: `buttons` held on pad 0 from frame `from` up to, not including, `until`.
#[derive(Debug, Clone, Copy)]
pub struct Press {
    pub buttons: u8,
    pub from: u64,
    pub until: u64,
}

#[derive(Debug, Clone)]
pub struct Options {
    pub protocol: Protocol,
    pub max_frames: u64,
    pub presses: Vec<Press>,
}

impl Default for Options {
    fn default() -> Self {
        Options { protocol: Protocol::Auto, max_frames: 3600, presses: Vec::new() }
    }
}

/// Runs one ROM file and judges it.
pub fn run_file(path: &Path, opts: &Options) -> Outcome {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => return fail(format!("cannot read ROM: {e}")),
    };
    match opts.protocol {
        Protocol::Klaus => run_klaus(&bytes),
        Protocol::Nestest => {
            let log = path.with_extension("log");
            match std::fs::read_to_string(&log) {
                Ok(text) => run_nestest(&bytes, &text),
                Err(e) => fail(format!("nestest needs its log at {}: {e}", log.display())),
            }
        }
        _ => match Console::new(&bytes) {
            Ok(console) => run_console(console, opts),
            Err(e) => fail(format!("bad ROM: {e}")),
        },
    }
}

fn fail(message: String) -> Outcome {
    Outcome { verdict: Verdict::Fail, message, frames: 0, ram: Vec::new() }
}

fn outcome(console: &Console, verdict: Verdict, message: String, frames: u64) -> Outcome {
    Outcome { verdict, message, frames, ram: console.ram().to_vec() }
}

/// The zero-terminated text a status6000 ROM printed, from $6004.
pub fn status_text(console: &Console) -> String {
    let mut s = String::new();
    for addr in 0x6004u16..0x7fff {
        let b = console.peek(addr);
        if b == 0 {
            break;
        }
        s.push(if b == b'\n' {
            '|'
        } else if (0x20..0x7f).contains(&b) {
            b as char
        } else {
            '?'
        });
    }
    s.trim_end_matches('|').to_string()
}

/// Nametable $2000 as 30 rows of 32 characters, with `decode` mapping tile numbers.
pub fn screen_rows(console: &Console, decode: fn(u8) -> char) -> Vec<String> {
    (0..30)
        .map(|row| {
            (0..32).map(|col| decode(console.cart().nametable_peek(0x2000 + row * 32 + col))).collect::<String>()
        })
        .collect()
}

fn ascii_tile(t: u8) -> char {
    if (0x20..0x7f).contains(&t) {
        t as char
    } else {
        ' '
    }
}

/// Holy Diver Batman's font: tile = ASCII & $3F.
fn hdb_tile(t: u8) -> char {
    let t = t & 0x3f;
    if t < 0x20 {
        (t + 0x40) as char
    } else {
        t as char
    }
}

fn screen_text(console: &Console) -> String {
    let rows = screen_rows(console, ascii_tile);
    let mut s = String::new();
    for r in rows {
        let t = r.trim();
        if !t.is_empty() {
            if !s.is_empty() {
                s.push('|');
            }
            s.push_str(t);
        }
    }
    s
}

/// Parked: IRQs masked, NMIs off, and the CPU inside a small loop (`JMP *`, or a few
/// instructions ending in a jump back), sampled at the end of a frame.
fn parked(console: &Console, window: &mut (u16, u16)) -> bool {
    let pc = console.cpu.pc;
    let quiet = console.cpu.p & crate::cpu::I != 0 && console.bus.ppu.ctrl() & 0x80 == 0;
    *window = (window.0.min(pc), window.1.max(pc));
    quiet && window.1 - window.0 < 16
}

fn run_console(mut console: Console, opts: &Options) -> Outcome {
    let mut reset_at: Option<u64> = None;
    let mut parked_frames = 0u32;
    let mut window = (u16::MAX, 0u16);
    for frame in 0..opts.max_frames {
        let mut buttons = 0u8;
        for p in &opts.presses {
            if frame >= p.from && frame < p.until {
                buttons |= p.buttons;
            }
        }
        console.set_buttons(0, buttons);
        console.run_frame();
        if let Some(fault) = console.fault() {
            return outcome(&console, Verdict::Fail, format!("{fault}"), frame + 1);
        }
        let signed = console.peek(0x6001) == 0xde && console.peek(0x6002) == 0xb0 && console.peek(0x6003) == 0x61;
        match opts.protocol {
            Protocol::Status6000 | Protocol::Auto if signed => {
                let code = console.peek(0x6000);
                if code == 0x81 {
                    match reset_at {
                        None => reset_at = Some(frame + 10),
                        Some(at) if frame >= at => {
                            console.reset();
                            reset_at = None;
                        }
                        _ => {}
                    }
                } else if code < 0x80 {
                    let text = status_text(&console);
                    let verdict = if code == 0 { Verdict::Pass } else { Verdict::Fail };
                    return outcome(&console, verdict, format!("code {code:#04x}: {text}"), frame + 1);
                }
            }
            Protocol::ZpF8 | Protocol::ZpF0 | Protocol::Screen | Protocol::Auto => {
                if parked(&console, &mut window) {
                    parked_frames += 1;
                } else {
                    parked_frames = 0;
                    window = (console.cpu.pc, console.cpu.pc);
                }
                // Parked for a while (not merely waiting for an NMI): the ROM is done.
                if parked_frames >= 30 {
                    let text = screen_text(&console);
                    return judge_parked(&console, opts.protocol, text, frame + 1);
                }
            }
            Protocol::HolyDiver => {
                if let Some(o) = judge_holy_diver(&console, frame + 1) {
                    return o;
                }
            }
            _ => {}
        }
    }
    let text = match opts.protocol {
        Protocol::Status6000 => status_text(&console),
        Protocol::HolyDiver => screen_rows(&console, hdb_tile)[4..9].join("|"),
        _ => screen_text(&console),
    };
    outcome(&console, Verdict::Timeout, format!("no verdict after {} frames: {text}", opts.max_frames), opts.max_frames)
}

fn judge_parked(console: &Console, protocol: Protocol, text: String, frames: u64) -> Outcome {
    let zp = match protocol {
        Protocol::ZpF8 => Some(0xf8),
        Protocol::ZpF0 => Some(0xf0),
        _ => None,
    };
    if let Some(addr) = zp {
        let code = console.ram()[addr];
        let verdict = if code == 1 { Verdict::Pass } else { Verdict::Fail };
        return outcome(console, verdict, format!("result ${addr:02X} = {code}: {text}"), frames);
    }
    let up = text.to_ascii_uppercase();
    let verdict = if up.contains("FAIL") || up.contains("ERROR") || up.contains("WRONG") {
        Verdict::Fail
    } else if up.contains("PASSED") {
        Verdict::Pass
    } else {
        Verdict::Fail
    };
    outcome(console, verdict, text, frames)
}

/// Judges the Holy Diver Batman report once its last row is printed.
fn judge_holy_diver(console: &Console, frames: u64) -> Option<Outcome> {
    let rows = screen_rows(console, hdb_tile);
    let detail = rows[8].trim();
    let code = detail.strip_prefix("DETAILED TEST RESULT:")?.trim();
    if code.len() < 4 {
        return None;
    }
    let cart = console.cart();
    let report = rows[4..9].iter().map(|r| r.trim()).collect::<Vec<_>>().join("|");
    let mut problems = Vec::new();
    let mapper = format!("{:03}", cart.mapper().number());
    if !rows[4].trim().starts_with(&mapper) {
        problems.push(format!("mapper is not {mapper}"));
    }
    let prg = format!("{}K PRG ROM", cart.prg_len() / 1024);
    if rows[5].trim() != prg {
        problems.push(format!("expected '{prg}'"));
    }
    let ram_ok = if cart.prg_ram().is_empty() {
        rows[6].trim() == "PRG RAM MISSING"
    } else {
        rows[6].trim().starts_with(&format!("{}K PRG RAM OK", cart.prg_ram().len() / 1024))
    };
    if !ram_ok {
        problems.push("PRG RAM row wrong".to_string());
    }
    let chr_kind = if cart.chr_is_ram { "RAM" } else { "ROM" };
    let chr = format!("{}K CHR {chr_kind} OK", cart.chr_len() / 1024);
    if rows[7].trim() != chr {
        problems.push(format!("expected '{chr}'"));
    }
    if report.contains("PROBLEM") {
        problems.push("PROBLEM reported".to_string());
    }
    if code != "0000" {
        problems.push(format!("detailed result {code}"));
    }
    let verdict = if problems.is_empty() { Verdict::Pass } else { Verdict::Fail };
    let message = if problems.is_empty() { report } else { format!("{report} ({})", problems.join("; ")) };
    Some(outcome(console, verdict, message, frames))
}

/// One parsed line of nestest.log.
#[derive(Debug, PartialEq, Eq)]
struct TraceLine {
    pc: u16,
    a: u8,
    x: u8,
    y: u8,
    p: u8,
    s: u8,
    cyc: u64,
}

fn parse_log_line(line: &str) -> Option<TraceLine> {
    let hex = |s: &str| u16::from_str_radix(s, 16).ok();
    let field = |name: &str| -> Option<&str> {
        let at = line.find(name)? + name.len();
        line[at..].split_whitespace().next()
    };
    Some(TraceLine {
        pc: hex(line.get(0..4)?)?,
        a: hex(field("A:")?)? as u8,
        x: hex(field("X:")?)? as u8,
        y: hex(field("Y:")?)? as u8,
        p: hex(field("P:")?)? as u8,
        s: hex(field("SP:")?)? as u8,
        cyc: field("CYC:")?.parse().ok()?,
    })
}

/// nestest in automation mode: start at $C000 and compare every instruction with the log.
/// The log must run to the test's end, the `RTS` that leaves the routine it started in (the
/// stack back at $FF): a log cut short would stop the test before it wrote its error codes.
pub fn run_nestest(rom: &[u8], log: &str) -> Outcome {
    let mut console = match Console::new(rom) {
        Ok(c) => c,
        Err(e) => return fail(format!("bad ROM: {e}")),
    };
    console.step(); // the 7-cycle reset sequence
    console.cpu.pc = 0xc000;
    console.cpu.p = crate::cpu::I;
    console.cpu.s = 0xfd;
    let mut lines = 0u64;
    let mut last_op = None;
    for (n, line) in log.lines().enumerate() {
        let Some(want) = parse_log_line(line) else {
            return fail(format!("nestest.log line {} unreadable", n + 1));
        };
        let got = TraceLine {
            pc: console.cpu.pc,
            a: console.cpu.a,
            x: console.cpu.x,
            y: console.cpu.y,
            p: console.cpu.status_for_push() & !crate::cpu::B,
            s: console.cpu.s,
            cyc: console.cycles(),
        };
        let op_bytes_ok =
            (0..crate::cpu::ops::len(crate::cpu::ops::OPS[console.peek(got.pc) as usize].mode)).all(|i| {
                let col = 6 + 3 * i as usize;
                line.get(col..col + 2).and_then(|s| u8::from_str_radix(s, 16).ok())
                    == Some(console.peek(got.pc.wrapping_add(i)))
            });
        if got != want || !op_bytes_ok {
            return Outcome {
                verdict: Verdict::Fail,
                message: format!("line {}: expected {want:?}, got {got:?}: {line}", n + 1),
                frames: 0,
                ram: console.ram().to_vec(),
            };
        }
        last_op = Some(console.peek(got.pc));
        console.step();
        lines += 1;
    }
    if last_op != Some(0x60) || console.cpu.s != 0xff {
        return fail(format!(
            "nestest.log ends after {lines} lines, before the test's last RTS (S={:02X})",
            console.cpu.s
        ));
    }
    let (e2, e3) = (console.ram()[2], console.ram()[3]);
    let verdict = if e2 == 0 && e3 == 0 { Verdict::Pass } else { Verdict::Fail };
    Outcome {
        verdict,
        message: format!("{lines} log lines match; $02={e2:02X} $03={e3:02X}"),
        frames: 0,
        ram: console.ram().to_vec(),
    }
}

/// A flat 64 KiB memory for the Klaus Dormann functional test.
struct FlatBus {
    mem: Vec<u8>,
    cycles: u64,
}

impl CpuBus for FlatBus {
    fn read(&mut self, addr: u16) -> u8 {
        self.cycles += 1;
        self.mem[addr as usize]
    }
    fn write(&mut self, addr: u16, v: u8) {
        self.cycles += 1;
        self.mem[addr as usize] = v;
    }
    fn nmi_line(&self) -> bool {
        false
    }
    fn irq_line(&self) -> bool {
        false
    }
    fn idle(&mut self) {
        self.cycles += 1;
    }
}

/// Klaus Dormann's 6502 functional test with BCD switched on (generic-6502 mode): success is
/// the trap at $3469.
pub fn run_klaus(image: &[u8]) -> Outcome {
    if image.len() != 0x10000 {
        return fail(format!("expected a 65536-byte image, got {} bytes", image.len()));
    }
    let mut bus = FlatBus { mem: image.to_vec(), cycles: 0 };
    let mut cpu = Cpu::new();
    cpu.step(&mut bus); // reset sequence, then start where the test says
    cpu.pc = 0x0400;
    cpu.decimal_mode = true;
    let budget = 200_000_000u64;
    while bus.cycles < budget {
        let pc = cpu.pc;
        cpu.step(&mut bus);
        if cpu.pc == pc {
            let case = bus.mem[0x200];
            let (verdict, what) = if pc == 0x3469 { (Verdict::Pass, "success trap") } else { (Verdict::Fail, "trap") };
            return Outcome {
                verdict,
                message: format!("{what} at ${pc:04X} after {} cycles, test_case ${case:02X}", bus.cycles),
                frames: 0,
                ram: Vec::new(),
            };
        }
    }
    Outcome { verdict: Verdict::Timeout, message: format!("no trap in {budget} cycles"), frames: 0, ram: Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nestest_log_line_parses() {
        let l = "C000  4C F5 C5  JMP $C5F5                       A:00 X:00 Y:00 P:24 SP:FD PPU:  0, 21 CYC:7";
        assert_eq!(parse_log_line(l), Some(TraceLine { pc: 0xc000, a: 0, x: 0, y: 0, p: 0x24, s: 0xfd, cyc: 7 }));
    }

    #[test]
    fn holy_diver_tiles_are_ascii_and_3f() {
        assert_eq!(hdb_tile(0x01), 'A');
        assert_eq!(hdb_tile(0x30), '0');
        assert_eq!(hdb_tile(0x20), ' ');
    }
}

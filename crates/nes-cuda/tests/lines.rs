//! Drawing each step's last frame after it ran, line by line (kernels/lines.cuh, host build),
//! gives the states and pictures of drawing it while it runs: SMB, Tetris and every test ROM,
//! after every step. Each check also counts the frames the line renderer drew itself rather than
//! leaving them to a redraw, so a renderer that gave up on everything would fail too. The 84x84
//! pictures the line renderer makes as it draws are checked against `picture::gray84` too.

use nes_cuda::picture::{gray84, GRAY_PIXELS};
use nes_cuda::{host, RomImage, PIXELS_PER_ENV};

mod common;
use common::{rom, test_roms, Rng};

fn game(name: &str) -> Vec<u8> {
    rom(name).unwrap_or_else(|| panic!("{name} missing: `python -m nesle roms fetch` (or set NESLE_ROM_DIR)"))
}

/// `host::step_drawn_by_lines` against `host::step` with pictures: `envs` envs of random
/// buttons (a new press every step), `steps` steps of `frameskip` frames; states, pictures and
/// 84x84 pictures after every step. Returns the frames drawn line by line, of `envs * steps`.
fn lines_alike(name: &str, bytes: &[u8], envs: usize, steps: usize, frameskip: u32) -> usize {
    let image = RomImage::new(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut drawn = vec![image.power_on(); envs];
    for s in &mut drawn {
        s.ppu_render_pixels = 1;
    }
    let mut lined = drawn.clone();
    let (mut a, mut b) = (vec![0u8; envs * PIXELS_PER_ENV], vec![0u8; envs * PIXELS_PER_ENV]);
    let (mut gray, mut want) = (vec![0u8; envs * GRAY_PIXELS], vec![0u8; envs * GRAY_PIXELS]);
    let mut rng = Rng(11);
    let mut by_lines = 0;
    for step in 0..steps {
        let actions: Vec<u8> = (0..envs).map(|_| (rng.next() >> 9) as u8).collect();
        host::step(&mut drawn, &image, &actions, frameskip, Some(&mut a)).unwrap();
        by_lines += host::step_drawn_by_lines(&mut lined, &image, &actions, frameskip, &mut b, Some(&mut gray)).unwrap()
            as usize;
        for e in 0..envs {
            if let Some((field, i)) = nes_core::flat::first_difference(&drawn[e], &lined[e]) {
                panic!("{name} step {step} env {e}: state differs at `{field}`[{i}]");
            }
        }
        if let Some(i) = a.iter().zip(&b).position(|(x, y)| x != y) {
            let (e, p) = (i / PIXELS_PER_ENV, i % PIXELS_PER_ENV);
            panic!(
                "{name} step {step} env {e}: pixel {p} (line {}, x {}): {} drawn, {} by lines",
                p / 256,
                p % 256,
                a[i],
                b[i]
            );
        }
        gray84(&a, &mut want).unwrap();
        if let Some(i) = want.iter().zip(&gray).position(|(x, y)| x != y) {
            panic!(
                "{name} step {step} env {}: 84x84 pixel {}: {} from the picture, {} by the line renderer",
                i / GRAY_PIXELS,
                i % GRAY_PIXELS,
                want[i],
                gray[i]
            );
        }
    }
    eprintln!("{name}: {by_lines} of {} frames drawn line by line", envs * steps);
    by_lines
}

fn at_least(name: &str, by_lines: usize, frames: usize, share: f64) {
    assert!(by_lines as f64 >= share * frames as f64, "{name}: only {by_lines} of {frames} frames drawn line by line");
}

#[test]
fn games_drawn_line_by_line_match_the_drawn_ones() {
    // SMB's status bar split (two `$2005` writes on line 31 of every frame of play, fine X
    // from the dot of the first) and its screens with rendering off while it writes VRAM and
    // the palette (power-on, between lives and levels) are modelled: 600 of 600 and 792 of 800
    // frames when this was written (the rest pass LINE_EVENTS events).
    let smb = game("super-mario-bros.nes");
    at_least("smb", lines_alike("smb", &smb, 4, 150, 4), 600, 0.98);
    at_least("smb, one-frame steps", lines_alike("smb, one-frame steps", &smb, 4, 200, 1), 800, 0.98);
    let tetris = game("tetris.nes");
    at_least("tetris", lines_alike("tetris", &tetris, 4, 100, 4), 400, 0.9);
    // Two boards with PRG and CHR RAM (`make test` fetches every known game).
    for name in ["zelda.nes", "contra.nes"] {
        at_least(name, lines_alike(name, &game(name), 2, 150, 4), 300, 0.5);
    }
}

#[test]
fn test_roms_drawn_line_by_line_match_the_drawn_ones() {
    let roms = test_roms();
    let by_lines: usize =
        roms.iter().map(|p| lines_alike(&p.display().to_string(), &std::fs::read(p).unwrap(), 2, 60, 4)).sum();
    // Most test ROMs show a still picture, rendering on or off all frame.
    at_least("test ROMs", by_lines, roms.len() * 2 * 60, 0.5);
}

/// A 6502 program built byte by byte, with backward branches to labels.
struct Asm(Vec<u8>);

impl Asm {
    fn at(&self) -> usize {
        self.0.len()
    }
    fn op(&mut self, bytes: &[u8]) -> &mut Asm {
        self.0.extend_from_slice(bytes);
        self
    }
    fn abs(&mut self, opcode: u8, addr: u16) -> &mut Asm {
        self.op(&[opcode, addr as u8, (addr >> 8) as u8])
    }
    fn sta(&mut self, addr: u16) -> &mut Asm {
        self.abs(0x8d, addr)
    }
    fn stx(&mut self, addr: u16) -> &mut Asm {
        self.abs(0x8e, addr)
    }
    fn branch(&mut self, opcode: u8, target: usize) -> &mut Asm {
        let offset = target as isize - (self.at() as isize + 2);
        assert!((-128..=127).contains(&offset));
        self.op(&[opcode, offset as i8 as u8])
    }
    fn bne(&mut self, target: usize) -> &mut Asm {
        self.branch(0xd0, target)
    }
    fn bpl(&mut self, target: usize) -> &mut Asm {
        self.branch(0x10, target)
    }
}

/// An NROM cartridge whose program keeps rendering on and writes `$2005`, `$2001` and `$2000`
/// at dots that move from frame to frame: a pair of `$2005` writes and a `$2000` write timed
/// from vertical blank to fall around the pre-render line's copies of `t` into `v` (dots 257
/// and 280-304; the poll's jitter moves them by a cycle or two from one sweep to the next), then six more `$2005` and `$2001` writes after delays that vary, anywhere in
/// the frame, most of them inside a line (fine X and PPUMASK change mid-line). A nametable of
/// every tile over CHR of noise, and 64 sprites everywhere, under PPUCTRL `ctrl` (its pattern
/// table and sprite size bits; NMI off).
fn scroll_split_rom(ctrl: u8) -> Vec<u8> {
    let mut a = Asm(Vec::new());
    a.op(&[0x78, 0xd8, 0xa2, 0xff, 0x9a]); // sei, cld, ldx #$ff, txs
    a.op(&[0xa9, 0x00]).sta(0x2000).sta(0x2001);
    for _ in 0..2 {
        let wait = a.at();
        a.abs(0x2c, 0x2002).bpl(wait); // bit $2002, bpl: vertical blank
    }
    // The palette: entry i = i + 1.
    a.op(&[0xa9, 0x3f]).sta(0x2006).op(&[0xa9, 0x00]).sta(0x2006).op(&[0xa2, 0x00]);
    let pal = a.at();
    a.op(&[0xe8]).stx(0x2007).op(&[0xe0, 0x20]).bne(pal); // inx, stx $2007, cpx #32, bne
                                                          // Both nametables (and their attributes): byte i = i mod 256.
    a.op(&[0xa9, 0x20]).sta(0x2006).op(&[0xa9, 0x00]).sta(0x2006).op(&[0xa0, 0x08]); // ldy #8
    let page = a.at();
    a.op(&[0xa2, 0x00]);
    let byte = a.at();
    a.stx(0x2007).op(&[0xe8]).bne(byte).op(&[0x88]).bne(page); // inx, bne; dey, bne
                                                               // OAM: byte i = 9i mod 256.
    a.op(&[0xa9, 0x00]).sta(0x2003).op(&[0xa2, 0x00]);
    let oam = a.at();
    a.op(&[0x8a, 0x0a, 0x0a, 0x0a, 0x86, 0x00, 0x18, 0x65, 0x00]).sta(0x2004).op(&[0xe8]).bne(oam);
    a.op(&[0xa9, ctrl & 0x38]).sta(0x2000).op(&[0xa9, 0x1e]).sta(0x2001); // rendering on
    let frame = a.at();
    a.abs(0x2c, 0x2002).bpl(frame); // vertical blank (w = 0)
    a.op(&[0xe6, 0x01]); // inc $01: the frame counter
                         // About 2,140 cycles, then 30-45 x 5 more: the pre-render line's dots 250-400.
    a.op(&[0xa0, 17]);
    let outer = a.at();
    a.op(&[0xa2, 24]);
    let inner = a.at();
    a.op(&[0xca]).bne(inner).op(&[0x88]).bne(outer); // dex, bne; dey, bne
    a.op(&[0xa5, 0x01, 0x29, 0x0f, 0x18, 0x69, 30, 0xa8]); // lda $01, and #$0f, clc, adc #30, tay
    let var = a.at();
    a.op(&[0x88]).bne(var);
    a.op(&[0xa5, 0x01]).sta(0x2005).op(&[0x49, 0x5a]).sta(0x2005); // x, then y (eor #$5a)
    a.op(&[0x29, 0x03, 0x09, ctrl & 0x38]).sta(0x2000); // the nametable bits
    a.op(&[0xa9, 0x06, 0x85, 0x02]); // six writes anywhere: $02 counts them
    let write = a.at();
    a.op(&[0xa5, 0x01, 0x18, 0x65, 0x02, 0x0a, 0xa8, 0xc8]); // y = 2 ($01 + $02) + 1
    let wait = a.at();
    a.op(&[0xa2, 0x04]);
    let spin = a.at();
    a.op(&[0xca]).bne(spin).op(&[0x88]).bne(wait);
    // lda $02, asl x3, adc $01: the write counter in coarse X, so each x write moves it and a
    // line's copy of `t` at dot 257 shows on which side of that dot the write fell.
    a.op(&[0xa5, 0x02, 0x0a, 0x0a, 0x0a, 0x65, 0x01]).sta(0x2005);
    a.op(&[0x29, 0x07, 0x09, 0x18]).sta(0x2001); // grey and left columns vary, rendering stays on
    a.op(&[0xc6, 0x02]).bne(write); // dec $02
    a.abs(0x4c, 0xc000 + frame as u16); // jmp frame
    let mut prg = vec![0xeau8; 16384];
    prg[..a.0.len()].copy_from_slice(&a.0);
    prg[0x3ffc] = 0x00; // reset vector: $C000
    prg[0x3ffd] = 0xc0;
    let mut rng = Rng(3);
    let chr: Vec<u8> = (0..8192).map(|_| (rng.next() >> 13) as u8).collect();
    let mut rom = vec![b'N', b'E', b'S', 0x1a, 1, 1, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0]; // NROM, vertical
    rom.extend_from_slice(&prg);
    rom.extend_from_slice(&chr);
    rom
}

#[test]
fn mid_line_scroll_and_mask_writes_are_drawn_at_their_dots() {
    for ctrl in [0x08u8, 0x30] {
        let name = format!("scroll splits, PPUCTRL {ctrl:#04x}");
        // One-frame steps: every frame drawn and compared.
        at_least(&name, lines_alike(&name, &scroll_split_rom(ctrl), 1, 400, 1), 400, 0.9);
    }
}

/// An NROM cartridge whose program keeps rendering off and, at dots that move from frame to
/// frame, points `v` into the palette (`$2006`), writes four palette entries there (`$2007`:
/// the pixels drawn meanwhile show the entry `v` points at), points it back out, and flips
/// PPUMASK's greyscale bit: about ten rounds a frame, each after a delay that varies.
fn palette_hack_rom() -> Vec<u8> {
    let mut a = Asm(Vec::new());
    a.op(&[0x78, 0xd8, 0xa2, 0xff, 0x9a]); // sei, cld, ldx #$ff, txs
    a.op(&[0xa9, 0x00]).sta(0x2000).sta(0x2001);
    for _ in 0..2 {
        let wait = a.at();
        a.abs(0x2c, 0x2002).bpl(wait);
    }
    let round = a.at();
    a.op(&[0xe6, 0x01]); // inc $01
    a.op(&[0xa5, 0x01, 0x0a, 0xa8, 0xc8]); // lda $01, asl, tay, iny: 1-256 x 25 cycles
    let wait = a.at();
    a.op(&[0xa2, 0x04]);
    let spin = a.at();
    a.op(&[0xca]).bne(spin).op(&[0x88]).bne(wait);
    a.op(&[0xa9, 0x3f]).sta(0x2006).op(&[0xa5, 0x01, 0x29, 0x1f]).sta(0x2006); // v = $3F00 + ($01 & 31)
    a.op(&[0xa5, 0x01]).sta(0x2007); // four entries, $01 + 0, 7, 14, 21
    for _ in 0..3 {
        a.op(&[0x18, 0x69, 0x07]).sta(0x2007); // clc, adc #7
    }
    a.op(&[0xa9, 0x20]).sta(0x2006).op(&[0xa9, 0x00]).sta(0x2006); // v = $2000
    a.op(&[0xa5, 0x01, 0x29, 0x01]).sta(0x2001); // greyscale on or off, rendering off
    a.abs(0x4c, 0xc000 + round as u16); // jmp
    let mut prg = vec![0xeau8; 16384];
    prg[..a.0.len()].copy_from_slice(&a.0);
    prg[0x3ffc] = 0x00;
    prg[0x3ffd] = 0xc0;
    let mut rom = vec![b'N', b'E', b'S', 0x1a, 1, 1, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    rom.extend_from_slice(&prg);
    rom.extend_from_slice(&[0u8; 8192]);
    rom
}

#[test]
fn palette_writes_with_rendering_off_are_drawn_at_their_dots() {
    let name = "palette writes, rendering off";
    // Frames whose rounds come fast (short delays) pass LINE_EVENTS events and are redrawn.
    at_least(name, lines_alike(name, &palette_hack_rom(), 1, 300, 1), 300, 0.8);
}

//! Unit tests: each name states the hardware fact it checks. The test ROMs in
//! shared/test-roms/ppu check the same facts through the CPU, to the exact dot.

use super::*;

/// An NROM cartridge with 8 KiB of CHR RAM (so tests can write patterns) and vertical
/// mirroring.
fn cart() -> Cart {
    let mut rom = alloc::vec![0u8; 16 + 0x4000];
    rom[0..4].copy_from_slice(b"NES\x1a");
    rom[4] = 1;
    rom[5] = 0;
    rom[6] = 0x01;
    Cart::from_ines(&rom).unwrap()
}

/// A PPU past its power-on warm-up, stopped at the end of line 261, dot 1.
pub(super) fn warm() -> (Ppu, Cart) {
    let mut ppu = Ppu::new();
    let mut cart = cart();
    while ppu.warming_up {
        ppu.tick(&mut cart);
    }
    (ppu, cart)
}

/// Ticks until `(scanline, dot)` has just been processed.
pub(super) fn run_to(ppu: &mut Ppu, cart: &mut Cart, line: u16, dot: u16) {
    ppu.tick(cart);
    while ppu.scanline != line || ppu.dot != dot {
        ppu.tick(cart);
    }
}

fn set_addr(ppu: &mut Ppu, cart: &mut Cart, addr: u16) {
    ppu.cpu_write(0x2006, (addr >> 8) as u8, cart);
    ppu.cpu_write(0x2006, addr as u8, cart);
}

pub(super) fn write_vram(ppu: &mut Ppu, cart: &mut Cart, addr: u16, bytes: &[u8]) {
    set_addr(ppu, cart, addr);
    for &b in bytes {
        ppu.cpu_write(0x2007, b, cart);
    }
}

/// Tile 1 is solid colour 1; nametable 0 is all tile 0 (transparent) except `bg_tiles`
/// (column, row); sprite 0 uses tile 1 at OAM (`y`, `x`). Rendering off, at vblank.
pub(super) fn scene(bg_tiles: &[(u16, u16)], sprites: &[(u8, u8)]) -> (Ppu, Cart) {
    let (mut ppu, mut cart) = warm();
    run_to(&mut ppu, &mut cart, 241, 10);
    write_vram(&mut ppu, &mut cart, 0x0010, &[0xff; 8]);
    write_vram(&mut ppu, &mut cart, 0x0018, &[0x00; 8]);
    for &(col, row) in bg_tiles {
        write_vram(&mut ppu, &mut cart, 0x2000 + row * 32 + col, &[1]);
    }
    write_vram(&mut ppu, &mut cart, 0x3f00, &[0x0f, 0x16, 0x27, 0x30]);
    write_vram(&mut ppu, &mut cart, 0x3f10, &[0x0f, 0x2a, 0x2b, 0x2c]);
    ppu.cpu_write(0x2003, 0, &mut cart);
    for i in 0..64 {
        let (y, x) = if i < sprites.len() { sprites[i] } else { (0xff, 0xff) };
        for b in [y, 1, 0, x] {
            ppu.cpu_write(0x2004, b, &mut cart);
        }
    }
    ppu.cpu_write(0x2000, 0, &mut cart);
    ppu.cpu_write(0x2005, 0, &mut cart);
    ppu.cpu_write(0x2005, 0, &mut cart);
    (ppu, cart)
}

/// Runs from vblank through the next frame's visible lines with `mask` in $2001.
fn render_frame(ppu: &mut Ppu, cart: &mut Cart, mask: u8) {
    ppu.cpu_write(0x2001, mask, cart);
    run_to(ppu, cart, 240, 0);
}

#[test]
fn reading_2002_clears_w_and_the_vblank_flag() {
    let (mut ppu, mut cart) = warm();
    run_to(&mut ppu, &mut cart, 241, 5);
    ppu.cpu_write(0x2005, 0x12, &mut cart);
    assert!(ppu.w);
    assert_eq!(ppu.cpu_read(0x2002, &mut cart) & 0x80, 0x80);
    assert!(!ppu.w);
    assert_eq!(ppu.cpu_read(0x2002, &mut cart) & 0x80, 0);
}

#[test]
fn vblank_is_set_at_line_241_dot_1_and_cleared_at_pre_render_dot_1() {
    let (mut ppu, mut cart) = warm();
    ppu.frame_complete = false;
    run_to(&mut ppu, &mut cart, 241, 0);
    assert_eq!(ppu.status & STATUS_VBLANK, 0);
    assert!(!ppu.frame_complete);
    ppu.tick(&mut cart);
    assert_eq!(ppu.status & STATUS_VBLANK, STATUS_VBLANK);
    assert!(ppu.frame_complete);
    run_to(&mut ppu, &mut cart, 261, 0);
    assert_eq!(ppu.status & STATUS_VBLANK, STATUS_VBLANK);
    ppu.tick(&mut cart);
    assert_eq!(ppu.status & STATUS_VBLANK, 0);
}

#[test]
fn reading_2002_one_dot_before_vblank_suppresses_the_flag_and_nmi_for_that_frame() {
    let (mut ppu, mut cart) = warm();
    ppu.cpu_write(0x2000, 0x80, &mut cart);
    run_to(&mut ppu, &mut cart, 241, 0);
    assert_eq!(ppu.cpu_read(0x2002, &mut cart) & 0x80, 0);
    run_to(&mut ppu, &mut cart, 250, 0);
    assert_eq!(ppu.status & STATUS_VBLANK, 0);
    assert!(!ppu.nmi());
}

#[test]
fn the_nmi_output_is_the_vblank_flag_and_ppuctrl_bit_7() {
    let (mut ppu, mut cart) = warm();
    run_to(&mut ppu, &mut cart, 241, 1);
    assert!(!ppu.nmi(), "NMI disabled");
    ppu.cpu_write(0x2000, 0x80, &mut cart);
    assert!(ppu.nmi(), "enabling NMI during vblank raises the output at once");
    ppu.cpu_write(0x2000, 0x00, &mut cart);
    assert!(!ppu.nmi());
    ppu.cpu_write(0x2000, 0x80, &mut cart);
    ppu.cpu_read(0x2002, &mut cart);
    assert!(!ppu.nmi(), "reading $2002 clears the flag and so the output");
}

#[test]
fn frames_are_89342_dots_when_rendering_is_off() {
    let (mut ppu, mut cart) = warm();
    for _ in 0..2 {
        run_to(&mut ppu, &mut cart, 241, 1);
        let start = ppu.dot_clock;
        run_to(&mut ppu, &mut cart, 241, 1);
        assert_eq!(ppu.dot_clock - start, 89342);
    }
}

#[test]
fn odd_frames_are_one_dot_shorter_when_rendering() {
    let (mut ppu, mut cart) = warm();
    ppu.cpu_write(0x2001, 0x08, &mut cart);
    let mut lengths = [0u64; 4];
    run_to(&mut ppu, &mut cart, 241, 1);
    for len in lengths.iter_mut() {
        let start = ppu.dot_clock;
        run_to(&mut ppu, &mut cart, 241, 1);
        *len = ppu.dot_clock - start;
    }
    lengths.sort();
    assert_eq!(lengths, [89341, 89341, 89342, 89342]);
}

#[test]
fn writes_to_2000_2001_2005_2006_are_ignored_until_the_first_pre_render_line() {
    let mut ppu = Ppu::new();
    let mut cart = cart();
    ppu.cpu_write(0x2000, 0x80, &mut cart);
    ppu.cpu_write(0x2001, 0x1e, &mut cart);
    ppu.cpu_write(0x2006, 0x21, &mut cart);
    assert_eq!((ppu.ctrl, ppu.mask, ppu.t, ppu.w), (0, 0, 0, false));
    ppu.cpu_write(0x2003, 0x40, &mut cart);
    assert_eq!(ppu.oam_addr, 0x40, "OAMADDR is not blocked");
    run_to(&mut ppu, &mut cart, 261, 1);
    ppu.cpu_write(0x2000, 0x80, &mut cart);
    assert_eq!(ppu.ctrl, 0x80);
}

#[test]
fn palette_3f10_mirrors_3f00_and_so_do_14_18_1c() {
    let (mut ppu, mut cart) = warm();
    for (mirror, base) in [(0x3f10u16, 0x3f00u16), (0x3f14, 0x3f04), (0x3f18, 0x3f08), (0x3f1c, 0x3f0c)] {
        write_vram(&mut ppu, &mut cart, mirror, &[0x21]);
        set_addr(&mut ppu, &mut cart, base);
        assert_eq!(ppu.cpu_read(0x2007, &mut cart) & 0x3f, 0x21);
        write_vram(&mut ppu, &mut cart, base, &[0x12]);
        set_addr(&mut ppu, &mut cart, mirror);
        assert_eq!(ppu.cpu_read(0x2007, &mut cart) & 0x3f, 0x12);
    }
    // $3F11 is its own entry.
    write_vram(&mut ppu, &mut cart, 0x3f11, &[0x05]);
    write_vram(&mut ppu, &mut cart, 0x3f01, &[0x06]);
    set_addr(&mut ppu, &mut cart, 0x3f11);
    assert_eq!(ppu.cpu_read(0x2007, &mut cart) & 0x3f, 0x05);
}

#[test]
fn palette_entries_are_6_bits_and_read_with_the_io_latch_in_bits_6_and_7() {
    let (mut ppu, mut cart) = warm();
    write_vram(&mut ppu, &mut cart, 0x3f01, &[0xff]);
    set_addr(&mut ppu, &mut cart, 0x3f01);
    ppu.io_latch = 0x80;
    assert_eq!(ppu.cpu_read(0x2007, &mut cart), 0xbf);
}

#[test]
fn palette_mirrors_every_32_bytes_up_to_3fff() {
    let (mut ppu, mut cart) = warm();
    write_vram(&mut ppu, &mut cart, 0x3fe3, &[0x2d]);
    set_addr(&mut ppu, &mut cart, 0x3f03);
    assert_eq!(ppu.cpu_read(0x2007, &mut cart) & 0x3f, 0x2d);
}

#[test]
fn the_2007_read_buffer_delays_nametable_reads_by_one() {
    let (mut ppu, mut cart) = warm();
    write_vram(&mut ppu, &mut cart, 0x2400, &[0xaa, 0xbb, 0xcc]);
    set_addr(&mut ppu, &mut cart, 0x2400);
    ppu.cpu_read(0x2007, &mut cart);
    assert_eq!(ppu.cpu_read(0x2007, &mut cart), 0xaa);
    assert_eq!(ppu.cpu_read(0x2007, &mut cart), 0xbb);
    assert_eq!(ppu.cpu_read(0x2007, &mut cart), 0xcc);
}

#[test]
fn palette_reads_are_immediate_and_fill_the_buffer_from_the_nametable_underneath() {
    let (mut ppu, mut cart) = warm();
    write_vram(&mut ppu, &mut cart, 0x2f05, &[0x77]);
    write_vram(&mut ppu, &mut cart, 0x3f05, &[0x19]);
    set_addr(&mut ppu, &mut cart, 0x3f05);
    assert_eq!(ppu.cpu_read(0x2007, &mut cart) & 0x3f, 0x19);
    assert_eq!(ppu.read_buffer, 0x77);
}

#[test]
fn ppuctrl_bit_2_makes_2007_step_by_32() {
    let (mut ppu, mut cart) = warm();
    ppu.cpu_write(0x2000, 0x04, &mut cart);
    write_vram(&mut ppu, &mut cart, 0x2000, &[1, 2]);
    ppu.cpu_write(0x2000, 0x00, &mut cart);
    set_addr(&mut ppu, &mut cart, 0x2020);
    ppu.cpu_read(0x2007, &mut cart);
    assert_eq!(ppu.cpu_read(0x2007, &mut cart), 2);
}

#[test]
fn scroll_and_address_writes_fill_t_x_and_v_as_loopy_describes() {
    let (mut ppu, mut cart) = warm();
    ppu.cpu_write(0x2000, 0x03, &mut cart);
    ppu.cpu_write(0x2005, 0x7d, &mut cart); // coarse X 15, fine X 5
    ppu.cpu_write(0x2005, 0x5e, &mut cart); // coarse Y 11, fine Y 6
    assert_eq!(ppu.t, 0x6c00 | (11 << 5) | 15);
    assert_eq!(ppu.x, 5);
    ppu.cpu_write(0x2006, 0xff, &mut cart); // bit 14 is cleared
    assert_eq!(ppu.t & 0x7f00, 0x3f00);
    ppu.cpu_write(0x2006, 0x10, &mut cart);
    assert_eq!((ppu.t, ppu.v), (0x3f10, 0x3f10));
}

#[test]
fn write_only_registers_read_back_the_io_latch() {
    let (mut ppu, mut cart) = warm();
    ppu.cpu_write(0x2003, 0x5a, &mut cart);
    for reg in [0x2000, 0x2001, 0x2003, 0x2005, 0x2006] {
        assert_eq!(ppu.cpu_read(reg, &mut cart), 0x5a);
    }
    // $2002's low 5 bits are the latch too.
    assert_eq!(ppu.cpu_read(0x2002, &mut cart) & 0x1f, 0x1a);
}

#[test]
fn oam_attribute_bits_2_to_4_read_as_zero_and_2004_reads_do_not_increment() {
    let (mut ppu, mut cart) = warm();
    run_to(&mut ppu, &mut cart, 241, 10);
    ppu.cpu_write(0x2003, 0x02, &mut cart);
    ppu.cpu_write(0x2004, 0xff, &mut cart);
    ppu.cpu_write(0x2004, 0xff, &mut cart);
    ppu.cpu_write(0x2003, 0x02, &mut cart);
    assert_eq!(ppu.cpu_read(0x2004, &mut cart), 0xe3);
    assert_eq!(ppu.cpu_read(0x2004, &mut cart), 0xe3);
    ppu.cpu_write(0x2003, 0x03, &mut cart);
    assert_eq!(ppu.cpu_read(0x2004, &mut cart), 0xff);
}

#[test]
fn a_2004_write_during_rendering_only_bumps_oamaddr_by_4() {
    let (mut ppu, mut cart) = warm();
    ppu.cpu_write(0x2001, 0x18, &mut cart);
    run_to(&mut ppu, &mut cart, 10, 100);
    let addr = ppu.oam_addr;
    let before = ppu.oam;
    ppu.cpu_write(0x2004, 0x42, &mut cart);
    assert_eq!(ppu.oam_addr, addr.wrapping_add(4));
    assert_eq!(ppu.oam, before);
}

#[test]
fn oamaddr_is_reset_to_0_during_sprite_fetches() {
    let (mut ppu, mut cart) = warm();
    ppu.cpu_write(0x2001, 0x18, &mut cart);
    run_to(&mut ppu, &mut cart, 5, 250);
    ppu.cpu_write(0x2003, 0x80, &mut cart);
    run_to(&mut ppu, &mut cart, 5, 260);
    assert_eq!(ppu.oam_addr, 0);
}

#[test]
fn a_2007_access_during_rendering_increments_coarse_x_and_y_together() {
    let (mut ppu, mut cart) = warm();
    ppu.cpu_write(0x2001, 0x08, &mut cart);
    run_to(&mut ppu, &mut cart, 20, 100);
    let v = ppu.v;
    ppu.cpu_read(0x2007, &mut cart);
    let mut expect = ppu.clone();
    expect.v = v;
    expect.increment_x();
    expect.increment_y();
    assert_eq!(ppu.v, expect.v);
}

#[test]
fn the_vertical_scroll_is_copied_from_t_on_the_pre_render_line() {
    let (mut ppu, mut cart) = warm();
    run_to(&mut ppu, &mut cart, 241, 10);
    ppu.cpu_write(0x2000, 0x02, &mut cart);
    ppu.cpu_write(0x2005, 0x00, &mut cart);
    ppu.cpu_write(0x2005, 0x23, &mut cart);
    ppu.cpu_write(0x2001, 0x08, &mut cart);
    run_to(&mut ppu, &mut cart, 261, 305);
    assert_eq!(ppu.v & 0x7be0, ppu.t & 0x7be0);
    assert_eq!(ppu.v & 0x0800, 0x0800);
}

#[test]
fn sprite_0_hit_needs_an_opaque_background_pixel_under_an_opaque_sprite_pixel() {
    // Background tile at column 10, row 5 (x 80-87, y 40-47); sprite 0 overlapping it.
    let (mut ppu, mut cart) = scene(&[(10, 5)], &[(43, 84)]);
    render_frame(&mut ppu, &mut cart, 0x1e);
    assert_eq!(ppu.status & STATUS_SPRITE0, STATUS_SPRITE0);

    let (mut ppu, mut cart) = scene(&[(10, 5)], &[(43, 100)]);
    render_frame(&mut ppu, &mut cart, 0x1e);
    assert_eq!(ppu.status & STATUS_SPRITE0, 0, "sprite beside the tile");

    let (mut ppu, mut cart) = scene(&[(10, 5)], &[(43, 84)]);
    render_frame(&mut ppu, &mut cart, 0x14);
    assert_eq!(ppu.status & STATUS_SPRITE0, 0, "sprites alone cannot hit");
}

#[test]
fn sprite_0_hit_is_set_on_the_dot_after_the_overlapping_pixel() {
    // Sprite at x=84, y=43: first drawn on line 44; pixel 84 is composed on dot 85.
    let (mut ppu, mut cart) = scene(&[(10, 5)], &[(43, 84)]);
    ppu.cpu_write(0x2001, 0x1e, &mut cart);
    run_to(&mut ppu, &mut cart, 44, 84);
    assert_eq!(ppu.status & STATUS_SPRITE0, 0);
    ppu.tick(&mut cart);
    assert_eq!(ppu.status & STATUS_SPRITE0, STATUS_SPRITE0);
}

#[test]
fn sprite_0_hit_never_happens_at_x_255() {
    let (mut ppu, mut cart) = scene(&[(31, 5)], &[(43, 255)]);
    render_frame(&mut ppu, &mut cart, 0x1e);
    assert_eq!(ppu.status & STATUS_SPRITE0, 0);
    let (mut ppu, mut cart) = scene(&[(31, 5)], &[(43, 254)]);
    render_frame(&mut ppu, &mut cart, 0x1e);
    assert_eq!(ppu.status & STATUS_SPRITE0, STATUS_SPRITE0);
}

#[test]
fn sprite_0_hit_is_blocked_in_the_left_8_pixels_when_either_layer_is_clipped() {
    for (mask, hit) in [(0x1e, true), (0x1c, false), (0x1a, false), (0x18, false)] {
        let (mut ppu, mut cart) = scene(&[(0, 5)], &[(43, 0)]);
        render_frame(&mut ppu, &mut cart, mask);
        assert_eq!(ppu.status & STATUS_SPRITE0 != 0, hit, "mask {mask:02x}");
    }
}

#[test]
fn nine_sprites_on_a_line_set_the_overflow_flag_and_eight_do_not() {
    let eight = [(50u8, 0u8); 8];
    let (mut ppu, mut cart) = scene(&[], &eight);
    render_frame(&mut ppu, &mut cart, 0x18);
    assert_eq!(ppu.status & STATUS_OVERFLOW, 0);
    let nine = [(50u8, 0u8); 9];
    let (mut ppu, mut cart) = scene(&[], &nine);
    render_frame(&mut ppu, &mut cart, 0x18);
    assert_eq!(ppu.status & STATUS_OVERFLOW, STATUS_OVERFLOW);
}

#[test]
fn overflow_and_sprite_0_hit_are_cleared_on_the_pre_render_line() {
    let (mut ppu, mut cart) = scene(&[(10, 5)], &[(43, 84); 9]);
    render_frame(&mut ppu, &mut cart, 0x1e);
    assert_eq!(ppu.status & (STATUS_OVERFLOW | STATUS_SPRITE0), STATUS_OVERFLOW | STATUS_SPRITE0);
    ppu.cpu_read(0x2002, &mut cart);
    assert_eq!(ppu.status & (STATUS_OVERFLOW | STATUS_SPRITE0), STATUS_OVERFLOW | STATUS_SPRITE0, "reading keeps them");
    run_to(&mut ppu, &mut cart, 261, 1);
    assert_eq!(ppu.status & 0xe0, 0);
}

#[test]
fn only_8_sprites_are_drawn_on_a_line() {
    // Nine sprites side by side on the same lines: the ninth (x=64..71) is dropped.
    let sprites: [(u8, u8); 9] = core::array::from_fn(|i| (50, (i * 8) as u8));
    let (mut ppu, mut cart) = scene(&[], &sprites);
    render_frame(&mut ppu, &mut cart, 0x1e);
    let row = 55 * WIDTH;
    assert_eq!(ppu.pixels[row + 60], 0x2a, "8th sprite drawn");
    assert_eq!(ppu.pixels[row + 66], 0x0f, "9th sprite dropped: backdrop");
}

#[test]
fn sprites_are_drawn_one_line_below_their_oam_y() {
    let (mut ppu, mut cart) = scene(&[], &[(50, 100)]);
    render_frame(&mut ppu, &mut cart, 0x1e);
    assert_eq!(ppu.pixels[50 * WIDTH + 100], 0x0f);
    assert_eq!(ppu.pixels[51 * WIDTH + 100], 0x2a);
    assert_eq!(ppu.pixels[58 * WIDTH + 100], 0x2a);
    assert_eq!(ppu.pixels[59 * WIDTH + 100], 0x0f);
}

#[test]
fn background_pixels_come_from_the_tile_at_the_scroll_position() {
    let (mut ppu, mut cart) = scene(&[(3, 2)], &[]);
    render_frame(&mut ppu, &mut cart, 0x0a);
    assert_eq!(ppu.pixels[16 * WIDTH + 24], 0x16);
    assert_eq!(ppu.pixels[16 * WIDTH + 31], 0x16);
    assert_eq!(ppu.pixels[16 * WIDTH + 32], 0x0f);
    assert_eq!(ppu.pixels[15 * WIDTH + 24], 0x0f);
    // Fine X scroll 3 moves it 3 pixels left.
    let (mut ppu, mut cart) = scene(&[(3, 2)], &[]);
    ppu.cpu_write(0x2005, 3, &mut cart);
    ppu.cpu_write(0x2005, 0, &mut cart);
    render_frame(&mut ppu, &mut cart, 0x0a);
    assert_eq!(ppu.pixels[16 * WIDTH + 21], 0x16);
    assert_eq!(ppu.pixels[16 * WIDTH + 20], 0x0f);
}

#[test]
fn left_8_pixel_masking_shows_the_backdrop() {
    let (mut ppu, mut cart) = scene(&[(0, 2)], &[]);
    render_frame(&mut ppu, &mut cart, 0x08);
    assert_eq!(ppu.pixels[16 * WIDTH + 3], 0x0f);
    let (mut ppu, mut cart) = scene(&[(0, 2)], &[]);
    render_frame(&mut ppu, &mut cart, 0x0a);
    assert_eq!(ppu.pixels[16 * WIDTH + 3], 0x16);
}

#[test]
fn greyscale_ands_the_colour_with_30() {
    let (mut ppu, mut cart) = scene(&[(3, 2)], &[]);
    render_frame(&mut ppu, &mut cart, 0x0b);
    assert_eq!(ppu.pixels[16 * WIDTH + 24], 0x16 & 0x30);
    assert_eq!(ppu.emphasis(), 0);
}

#[test]
fn behind_background_sprites_show_only_over_transparent_background() {
    let (mut ppu, mut cart) = scene(&[(12, 6)], &[(50, 92)]);
    ppu.cpu_write(0x2003, 2, &mut cart);
    ppu.cpu_write(0x2004, 0x20, &mut cart);
    render_frame(&mut ppu, &mut cart, 0x1e);
    assert_eq!(ppu.pixels[52 * WIDTH + 97], 0x16, "background wins where opaque");
    assert_eq!(ppu.pixels[52 * WIDTH + 93], 0x2a, "sprite shows beside it");
}

#[test]
fn tall_sprites_take_their_pattern_table_from_tile_bit_0() {
    // Tile $03 in 8x16 mode: top half tile 2 and bottom tile 3 of table $1000.
    let (mut ppu, mut cart) = scene(&[], &[(50, 100)]);
    write_vram(&mut ppu, &mut cart, 0x1030, &[0xff; 8]);
    ppu.cpu_write(0x2003, 1, &mut cart);
    ppu.cpu_write(0x2004, 0x03, &mut cart);
    ppu.cpu_write(0x2000, 0x20, &mut cart);
    render_frame(&mut ppu, &mut cart, 0x1e);
    assert_eq!(ppu.pixels[55 * WIDTH + 100], 0x0f, "tile 2 of $1000 is blank");
    assert_eq!(ppu.pixels[60 * WIDTH + 100], 0x2a, "tile 3 of $1000 is solid");
    assert_eq!(ppu.pixels[67 * WIDTH + 100], 0x0f, "16 lines tall");
}

#[test]
fn render_pixels_off_leaves_everything_the_cpu_sees_identical() {
    let (mut a, mut cart_a) = scene(&[(10, 5)], &[(43, 84); 9]);
    let mut b = a.clone();
    let mut cart_b = cart_a.clone();
    b.render_pixels = false;
    for ppu_cart in [(&mut a, &mut cart_a), (&mut b, &mut cart_b)] {
        let (ppu, cart) = ppu_cart;
        ppu.cpu_write(0x2001, 0x1e, cart);
        for _ in 0..3 * 89342 {
            ppu.tick(cart);
        }
    }
    let mut sa = [0u8; 1024];
    let mut sb = [0u8; 1024];
    let mut wa = StateWriter::new(&mut sa);
    a.save(&mut wa);
    let n = wa.len();
    let mut wb = StateWriter::new(&mut sb);
    b.save(&mut wb);
    // Byte 0 is render_pixels itself.
    assert_eq!(sa[1..n], sb[1..n]);
}

#[test]
fn a_saved_state_loads_back_to_the_same_behaviour() {
    let (mut ppu, mut cart) = scene(&[(10, 5)], &[(43, 84); 9]);
    ppu.cpu_write(0x2001, 0x1e, &mut cart);
    run_to(&mut ppu, &mut cart, 44, 200);
    let mut buf = [0u8; 1024];
    let mut w = StateWriter::new(&mut buf);
    ppu.save(&mut w);
    let len = w.len();
    assert!(len < buf.len());
    let mut copy = Ppu::new();
    copy.load(&mut StateReader::new(&buf[..len])).unwrap();
    let mut cart2 = cart.clone();
    for _ in 0..100_000 {
        ppu.tick(&mut cart);
        copy.tick(&mut cart2);
    }
    assert_eq!(ppu.cpu_read(0x2002, &mut cart), copy.cpu_read(0x2002, &mut cart2));
    assert_eq!((ppu.scanline, ppu.dot, ppu.v), (copy.scanline, copy.dot, copy.v));
    assert_eq!(ppu.pixels[..], copy.pixels[..WIDTH * HEIGHT]);
}

#[test]
fn reset_clears_ctrl_mask_and_w_and_blocks_writes_until_pre_render() {
    let (mut ppu, mut cart) = warm();
    ppu.cpu_write(0x2000, 0x80, &mut cart);
    ppu.cpu_write(0x2001, 0x1e, &mut cart);
    ppu.cpu_write(0x2005, 0x10, &mut cart);
    ppu.reset();
    assert_eq!((ppu.ctrl, ppu.mask, ppu.w), (0, 0, false));
    ppu.cpu_write(0x2000, 0x80, &mut cart);
    assert_eq!(ppu.ctrl, 0);
}

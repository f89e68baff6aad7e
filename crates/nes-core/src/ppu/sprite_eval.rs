//! Sprite evaluation: on dots 1-64 of a visible line the 2C02 fills secondary OAM with $FF;
//! on dots 65-256 it scans OAM for the (up to 8) sprites in range of the next line, copying
//! them to secondary OAM, and after 8 it keeps scanning with the hardware's diagonal bug, which
//! sets the overflow flag. `sprite_eval` is the reference, one dot at a time; `sprite_eval_span`
//! and `sprite_eval_line` do runs of dots at once for `Ppu::run` (perf-notes #42), and
//! `eval_cannot_fill` tells the `$2002` bound when the flag cannot rise on this line.

use super::*;

impl Ppu {
    /// Sprite evaluation, one dot (1-256 of a visible line). Dots 1-64 fill secondary OAM
    /// with $FF; from 65 on, odd dots read OAM at OAMADDR and even dots write secondary OAM.
    /// After 8 sprites, writes are disabled and the hardware keeps scanning with a bug: it
    /// increments the byte index `m` along with the sprite index `n`, so it reads tiles,
    /// attributes and X positions as Y coordinates (the "diagonal" overflow scan).
    #[inline]
    pub(super) fn sprite_eval(&mut self, d: u16) {
        if d <= 64 {
            self.eval_buffer = 0xff;
            if d & 1 == 0 {
                self.sec_oam[((d - 1) >> 1) as usize] = 0xff;
            }
            return;
        }
        if d == 65 {
            self.eval_sprite0 = false;
            self.eval_in_range = false;
            self.eval_sec_addr = 0;
            self.eval_overflow_count = 0;
            self.eval_done = false;
            self.eval_n = self.oam_addr >> 2;
            self.eval_m = self.oam_addr & 3;
        }
        if d & 1 == 1 {
            self.eval_buffer = self.oam[self.oam_addr as usize];
        } else {
            self.sprite_eval_write();
            self.oam_addr = (self.eval_n << 2) | (self.eval_m & 3);
            if d == 256 {
                self.eval_count = (self.eval_sec_addr >> 2).min(8);
            }
        }
    }

    /// Dots `from..=to` (within 65-255) of a visible line's sprite evaluation, exactly as
    /// `sprite_eval` dot by dot (perf-notes #42): where a pair (an odd dot's read, the even
    /// dot's write) starts with no sprite being copied, the scan reading sprite `eval_n`'s Y
    /// through OAMADDR and secondary OAM not full, the pairs up to the next sprite in range of
    /// the line (`in_range`), the wrap to sprite 0 or the span's end only move on: each read Y
    /// goes to the same secondary OAM byte, so the last one is what stays, in `eval_buffer` too.
    pub(super) fn sprite_eval_span(&mut self, from: u16, to: u16) {
        let mut d = from;
        let last = to.min(255); // dot 256 also counts the line's sprites
        while d <= to {
            let n = self.eval_n as u32;
            if d & 1 == 1
                && d > 65
                && d < last
                && self.eval_done
                && self.oam_addr == (self.eval_n << 2) | (self.eval_m & 3)
            {
                // The scan is done: each pair re-reads OAM at (n, m) and moves n on (its
                // write half reads secondary OAM once full), so the span's pairs run at once
                // (perf-notes #46).
                let k = (last - d + 1) as u32 / 2;
                let m = self.eval_m & 3;
                self.eval_buffer = if self.eval_sec_addr >= 32 {
                    self.sec_oam[(self.eval_sec_addr & 31) as usize]
                } else {
                    self.oam[((((n + k - 1) & 63) << 2) as u8 | m) as usize]
                };
                let next = ((n + k) & 63) as u8;
                self.eval_n = next;
                self.oam_addr = (next << 2) | m;
                d += 2 * k as u16;
                continue;
            }
            if d & 1 == 1
                && d > 65
                && d < to
                && !self.eval_done
                && self.eval_m == 0
                && !self.eval_in_range
                && self.eval_sec_addr < 32
                && self.oam_addr as u32 == n << 2
            {
                if !self.in_range_valid {
                    self.build_in_range();
                }
                let pairs = ((to - d + 1) as u32 / 2).min(64 - n);
                let ahead = self.in_range[self.scanline as usize] >> n;
                let q = if ahead == 0 { pairs } else { (ahead.trailing_zeros()).min(pairs) };
                if q > 0 {
                    self.eval_buffer = self.oam[((n + q - 1) * 4) as usize];
                    self.sec_oam[self.eval_sec_addr as usize] = self.eval_buffer;
                    let next = (n + q) & 63;
                    self.eval_n = next as u8;
                    self.eval_done = next == 0;
                    self.oam_addr = (next << 2) as u8;
                    d += 2 * q as u16;
                    continue;
                }
            }
            self.sprite_eval(d);
            d += 1;
        }
    }

    /// Sprite evaluation of dots 65-256 of a visible line at once: the same state machine as
    /// 192 `sprite_eval` calls, one iteration per read/write pair, in locals. Once the scan
    /// is done the remaining pairs only move `n` on and re-read, so they are computed in
    /// closed form.
    pub(super) fn sprite_eval_line(&mut self) {
        if !self.in_range_valid {
            self.build_in_range();
        }
        let height: i32 = if self.ctrl & CTRL_SPRITE_16 != 0 { 16 } else { 8 };
        let line = self.scanline as i32;
        let in_range_mask = self.in_range[line as usize];
        if self.oam_addr == 0 && in_range_mask.count_ones() < 8 {
            self.sprite_eval_line_few(in_range_mask);
            return;
        }
        let mut oam_addr = self.oam_addr;
        let mut n = oam_addr >> 2;
        let mut m = oam_addr & 3;
        let mut sec_addr = 0u8;
        let mut in_range = false;
        let mut done = false;
        let mut overflow_count = 0u8;
        let mut sprite0 = false;
        let mut overflow = false;
        let mut buffer = 0u8;
        let mut pair = 0u32;
        while pair < 96 {
            if done {
                // Each remaining pair: read OAM at (n, m), then n += 1.
                let r = 96 - pair;
                let last_n = (n as u32 + r - 1) as u8 & 63;
                n = (n as u32 + r) as u8 & 63;
                buffer = if sec_addr >= 32 {
                    self.sec_oam[(sec_addr & 31) as usize]
                } else {
                    self.oam[((last_n << 2) | (m & 3)) as usize]
                };
                oam_addr = (n << 2) | (m & 3);
                break;
            }
            if !in_range && sec_addr < 32 && m == 0 {
                // A run of out-of-range sprites: each pair reads Y at (n, 0), writes it to
                // secondary OAM (without advancing), and moves n on.
                let start = n as u32;
                let limit = (start + (96 - pair)).min(64);
                let ahead = self.in_range[line as usize] >> start;
                let k = (start + ahead.trailing_zeros()).min(limit);
                if k > start {
                    buffer = self.oam[((k - 1) * 4) as usize];
                    self.sec_oam[sec_addr as usize] = buffer;
                    pair += k - start;
                    n = k as u8 & 63;
                    done = n == 0;
                    oam_addr = n << 2;
                    continue;
                }
            }
            buffer = self.oam[oam_addr as usize];
            if !in_range {
                let row = line - buffer as i32;
                in_range = row >= 0 && row < height;
            }
            if sec_addr < 32 {
                self.sec_oam[sec_addr as usize] = buffer;
                if in_range {
                    m += 1;
                    sec_addr += 1;
                    if n == 0 {
                        sprite0 = true;
                    }
                    if sec_addr & 3 == 0 {
                        in_range = false;
                        m = 0;
                        n = (n + 1) & 63;
                        done = n == 0;
                    }
                } else {
                    n = (n + 1) & 63;
                    done = n == 0;
                }
            } else {
                buffer = self.sec_oam[(sec_addr & 31) as usize];
                if in_range {
                    overflow = true;
                    m += 1;
                    if m == 4 {
                        n = (n + 1) & 63;
                        m = 0;
                    }
                    if overflow_count == 0 {
                        overflow_count = 3;
                    } else {
                        overflow_count -= 1;
                        if overflow_count == 0 {
                            done = true;
                            m = 0;
                        }
                    }
                } else {
                    n = (n + 1) & 63;
                    m = (m + 1) & 3;
                    done = n == 0;
                }
            }
            oam_addr = (n << 2) | (m & 3);
            pair += 1;
        }
        self.oam_addr = oam_addr;
        self.eval_buffer = buffer;
        self.eval_sec_addr = sec_addr;
        self.eval_n = n;
        self.eval_m = m;
        self.eval_in_range = in_range;
        self.eval_done = done;
        self.eval_overflow_count = overflow_count;
        self.eval_sprite0 = sprite0;
        self.eval_count = (sec_addr >> 2).min(8);
        if overflow {
            self.status |= STATUS_OVERFLOW;
        }
    }

    /// `sprite_eval_line` for the usual case, the scan from sprite 0 (OAMADDR 0) with the
    /// fewer than 8 sprites of `mask` in range, in closed form (perf-notes #45): each in-range
    /// sprite's 4 bytes go to the next slot; the runs between them leave only Y bytes the
    /// copies overwrite, and the run after the last leaves sprite 63's Y in the next slot
    /// (unless sprite 63 is the last copied). That takes 64 + 3c of the 96 pairs; the rest read
    /// Y at n = 0, 1, ... with secondary OAM not full.
    fn sprite_eval_line_few(&mut self, mask: u64) {
        let c = mask.count_ones();
        let mut rest = mask;
        let mut slot = 0;
        while rest != 0 {
            let b = rest.trailing_zeros() as usize;
            self.sec_oam[slot..slot + 4].copy_from_slice(&self.oam[4 * b..4 * b + 4]);
            slot += 4;
            rest &= rest - 1;
        }
        if mask >> 63 == 0 {
            self.sec_oam[slot] = self.oam[63 * 4];
        }
        let r = 32 - 3 * c; // pairs left once the scan wraps
        self.oam_addr = (r << 2) as u8;
        self.eval_buffer = self.oam[((r - 1) * 4) as usize];
        self.eval_sec_addr = (4 * c) as u8;
        self.eval_n = r as u8;
        self.eval_m = 0;
        self.eval_in_range = false;
        self.eval_done = true;
        self.eval_overflow_count = 0;
        self.eval_sprite0 = mask & 1 != 0;
        self.eval_count = c as u8;
    }

    /// Rebuilds `in_range`: one bit per sprite on each visible line its Y covers.
    #[cold]
    pub(super) fn build_in_range(&mut self) {
        self.in_range_valid = true;
        self.in_range = [0; 240];
        let height = if self.ctrl & CTRL_SPRITE_16 != 0 { 16 } else { 8 };
        for i in 0..64 {
            let y = self.oam[i * 4] as usize;
            for line in y..(y + height).min(240) {
                self.in_range[line] |= 1 << i;
            }
        }
    }

    #[inline(always)]
    fn sprite_in_range(&self, y: u8) -> bool {
        let height = if self.ctrl & CTRL_SPRITE_16 != 0 { 16 } else { 8 };
        let row = self.scanline as i32 - y as i32;
        row >= 0 && row < height
    }

    /// Mid-evaluation (dots 65-255, the scan not done): whether the rest of the scan cannot
    /// fill secondary OAM, so the overflow flag cannot rise on this line. With no sprite being
    /// copied (`eval_m` 0, no hit pending), each pair still to come reads a Y byte, of sprites
    /// `eval_n..64` in order as an aligned scan does (after an odd dot the pair's byte is
    /// already in `eval_buffer`; after an even one OAMADDR must point at sprite `eval_n`), and
    /// secondary OAM fills only if enough of them are in range. (SMB polls `$2002` across
    /// these dots on the lines above its sprite-0 hit: without this the poll fast-forward
    /// stopped at every iteration there.)
    pub(super) fn eval_cannot_fill(&self) -> bool {
        if self.eval_m != 0 || self.eval_in_range || self.eval_sec_addr >= 32 {
            return false;
        }
        let need = (32 - self.eval_sec_addr as u32) / 4;
        let (mut found, next) = if self.dot & 1 == 1 {
            (self.sprite_in_range(self.eval_buffer) as u32, self.eval_n as usize + 1)
        } else if self.oam_addr == self.eval_n << 2 {
            (0, self.eval_n as usize)
        } else {
            return false;
        };
        for k in next..64 {
            found += self.sprite_in_range(self.oam[k * 4]) as u32;
            if found >= need {
                return false;
            }
        }
        found < need
    }

    /// The even-dot half of sprite evaluation.
    #[inline]
    fn sprite_eval_write(&mut self) {
        if self.eval_done {
            // Scan finished: n keeps counting, writes turn into reads of secondary OAM.
            self.eval_n = (self.eval_n + 1) & 63;
            if self.eval_sec_addr >= 32 {
                self.eval_buffer = self.sec_oam[(self.eval_sec_addr & 31) as usize];
            }
            return;
        }
        if !self.eval_in_range && self.sprite_in_range(self.eval_buffer) {
            self.eval_in_range = true;
        }
        if self.eval_sec_addr < 32 {
            self.sec_oam[self.eval_sec_addr as usize] = self.eval_buffer;
            if self.eval_in_range {
                self.eval_m += 1;
                self.eval_sec_addr += 1;
                if self.eval_n == 0 {
                    self.eval_sprite0 = true;
                }
                if self.eval_sec_addr & 3 == 0 {
                    // All 4 bytes copied.
                    self.eval_in_range = false;
                    self.eval_m = 0;
                    self.eval_n = (self.eval_n + 1) & 63;
                    if self.eval_n == 0 {
                        self.eval_done = true;
                    }
                }
            } else {
                self.eval_n = (self.eval_n + 1) & 63;
                if self.eval_n == 0 {
                    self.eval_done = true;
                }
            }
        } else {
            // Secondary OAM full: look for a 9th sprite (with the diagonal bug).
            self.eval_buffer = self.sec_oam[(self.eval_sec_addr & 31) as usize];
            if self.eval_in_range {
                self.status |= STATUS_OVERFLOW;
                self.eval_m += 1;
                if self.eval_m == 4 {
                    self.eval_n = (self.eval_n + 1) & 63;
                    self.eval_m = 0;
                }
                if self.eval_overflow_count == 0 {
                    self.eval_overflow_count = 3;
                } else {
                    self.eval_overflow_count -= 1;
                    if self.eval_overflow_count == 0 {
                        self.eval_done = true;
                        self.eval_m = 0;
                    }
                }
            } else {
                self.eval_n = (self.eval_n + 1) & 63;
                self.eval_m = (self.eval_m + 1) & 3;
                if self.eval_n == 0 {
                    self.eval_done = true;
                }
            }
        }
    }
}

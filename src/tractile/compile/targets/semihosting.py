"""C shared by the startup code of the semihosted boards (Cortex-M and RISC-V): exiting QEMU
and printing a word in hex, over the board's own ``tl_semihost_call``."""
from __future__ import annotations

SEMIHOSTED_EXIT_AND_HEX = r"""static void tl_exit(uint32_t reason) { tl_semihost_call(0x18, (const void *)reason); }

static void tl_put_hex(uint32_t value) {
  char text[12];
  int shift, at = 0;
  text[at++] = '0';
  text[at++] = 'x';
  for (shift = 28; shift >= 0; shift -= 4) text[at++] = "0123456789abcdef"[(value >> shift) & 15u];
  text[at] = 0;
  tl_semihost_call(0x04, text);
}
"""

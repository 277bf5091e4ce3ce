#!/usr/bin/env python3
# Lists the PCI and PCIe extended capabilities of every PCI device, read from its configuration
# space in sysfs (run as root to see past the first 64 bytes; needs no lspci): the PCIe
# capability's payload and read-request sizes and link, and whether a Virtual Channel capability
# exists. Output: configs/measurements/pci-config-h100-2026-11-27.json ("raw").
import os
import struct
names = {0x01:"PM",0x05:"MSI",0x09:"Vendor",0x10:"PCIe",0x11:"MSI-X",0x12:"SATA",0x13:"AF"}
xnames = {0x01:"AER",0x02:"VC",0x03:"DSN",0x04:"PowerBudget",0x09:"MFVC",0x0B:"VSEC",0x0D:"ACS",0x0E:"ARI",0x0F:"ATS",0x10:"SR-IOV",0x15:"ResizableBAR",0x17:"TPH",0x18:"LTR",0x19:"SecondaryPCIe",0x1E:"L1SS",0x1F:"PTM",0x23:"DVSEC",0x25:"DataLinkFeature",0x26:"Phys16GT",0x27:"LaneMargining",0x2A:"Phys32GT",0x24:"VFResizableBAR",0x0C:"MultiCast",0x1B:"PASID",0x1D:"DPC",0x13:"PRI"}
root = "/sys/bus/pci/devices"
for d in sorted(os.listdir(root)):
    try: cfg = open(os.path.join(root, d, "config"), "rb").read()
    except Exception as e: print(d, "unreadable", e); continue
    vid, did = struct.unpack_from("<HH", cfg, 0)
    cls = cfg[0x0B]; sub = cfg[0x0A]
    out = [f"{d} {vid:04x}:{did:04x} class {cls:02x}{sub:02x} cfg {len(cfg)}B"]
    if cfg[6] & 0x10 and len(cfg) >= 64:
        p = cfg[0x34] & 0xFC; seen = set()
        while p and p not in seen and p + 2 <= len(cfg):
            seen.add(p); cid = cfg[p]
            s = names.get(cid, hex(cid))
            if cid == 0x10:
                devcap = struct.unpack_from("<I", cfg, p+4)[0]
                devctl = struct.unpack_from("<H", cfg, p+8)[0]
                lnkcap = struct.unpack_from("<I", cfg, p+12)[0]
                lnksta = struct.unpack_from("<H", cfg, p+18)[0]
                s += f"(type {(cfg[p+2]>>4)&0xF} MPSsup {128<<(devcap&7)} MPS {128<<((devctl>>5)&7)} MRRS {128<<((devctl>>12)&7)} link cap gen{lnkcap&0xF} x{(lnkcap>>4)&0x3F} sta gen{lnksta&0xF} x{(lnksta>>4)&0x3F})"
            out.append(s); p = cfg[p+1] & 0xFC
    if len(cfg) > 256:
        p = 0x100; seen = set()
        while p and p not in seen and p + 4 <= len(cfg):
            seen.add(p); h = struct.unpack_from("<I", cfg, p)[0]
            if h == 0 or h == 0xFFFFFFFF: break
            cid = h & 0xFFFF
            s = xnames.get(cid, hex(cid))
            if cid == 0x02:
                c1 = struct.unpack_from("<I", cfg, p+4)[0]
                s += f"(extended VC count {c1 & 7}, low-priority {(c1>>4)&7})"
            out.append(s); p = (h >> 20) & 0xFFC
    print(" ".join(out))

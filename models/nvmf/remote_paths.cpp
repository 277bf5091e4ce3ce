#include "models/nvmf/remote_paths.h"

namespace gpunvme::nvmf {

RemotePathRead remote_path_read(RemotePath path, RemoteFabric& f, Picoseconds posted,
                                std::uint64_t bytes, std::uint32_t memory_key,
                                std::uint64_t address, Picoseconds ssd_time) {
  RemotePathRead out;
  out.posted = posted;
  const host::CpuIoCosts& host = f.host_costs;
  const Picoseconds target_busy_before = f.target_cores.busy_ps();

  switch (path) {
    case RemotePath::remote_staged: {
      const Picoseconds submitted = f.initiator_cores.run(posted, host.submit).end;
      out.exchange = remote_read(submitted, bytes, memory_key, address, f.initiator_nic,
                                 f.target_nic, f.link, f.target_cores, ssd_time, f.via);
      const Picoseconds reaped =
          f.initiator_cores.run(out.exchange.completed, host.complete_poll + host.copy_launch).end;
      const Picoseconds copied = reaped + network::serialization_ps(bytes, f.copy_gbps);
      out.delivered = f.initiator_cores.run(copied, host.copy_sync).end;
      out.host_core_ps = host.submit + host.complete_poll + host.copy_launch + host.copy_sync;
      out.host_memory_data_bytes = 2 * bytes;
      out.copies = 1;
      break;
    }
    case RemotePath::nvmf_gpudirect: {
      const Picoseconds submitted = f.initiator_cores.run(posted, host.submit).end;
      out.exchange = remote_read(submitted, bytes, memory_key, address, f.initiator_nic,
                                 f.target_nic, f.link, f.target_cores, ssd_time, f.via);
      out.delivered =
          f.initiator_cores.run(out.exchange.completed, host.complete_poll + host.notify).end;
      out.host_core_ps = host.submit + host.complete_poll + host.notify;
      break;
    }
    case RemotePath::dpu: {
      const Picoseconds submitted = f.initiator_cores.run(posted, f.dpu_io).end;
      out.exchange = remote_read(submitted, bytes, memory_key, address, f.initiator_nic,
                                 f.target_nic, f.link, f.target_cores, ssd_time, f.via);
      out.delivered = out.exchange.completed + f.dpu_switch;
      out.dpu_core_ps = f.dpu_io;
      break;
    }
  }
  out.target_core_ps = f.target_cores.busy_ps() - target_busy_before;
  return out;
}

}  // namespace gpunvme::nvmf

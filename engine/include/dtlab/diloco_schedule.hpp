// diloco_schedule.hpp: which blocks form each Streaming DiLoCo fragment, and
// when each fragment syncs. Pure functions (unit-tested in test_diloco.cpp).
//
// Fragments are strided over the model's units (Streaming DiLoCo, §2): with F
// fragments, block b belongs to fragment b mod F; the root unit (embeddings,
// final norm, head; unit -1) belongs to fragment 0.
// Fragment f of F syncs after step s (steps count from 0) when
//     (s + 1) - f H / F  is a positive multiple of H
// (H = 100, F = 2: fragment 0 after steps 99, 199, ...; fragment 1 after 149,
// 249, ...). Its pseudo-gradient is sent then and applied `delay` (tau) steps
// later; on the run's last step every fragment is sent (if it has trained
// since its last sync) and every pending one applied, so all replicas end
// with the same global model.
#pragma once

namespace dt::diloco {

[[nodiscard]] inline int fragmentOfUnit(int unit, int fragments) {
    return unit < 0 ? 0 : unit % fragments;
}

// H / F steps between the syncs of two consecutive fragments.
[[nodiscard]] inline int fragmentOffset(int fragment, int inner_steps, int fragments) {
    return fragment * (inner_steps / fragments);
}

[[nodiscard]] inline bool sendsAfterStep(int step, int fragment, int inner_steps, int fragments) {
    const int since = step + 1 - fragmentOffset(fragment, inner_steps, fragments);
    return since >= inner_steps && since % inner_steps == 0;
}

// Under the quorum (Streaming DiLoCo, ft_streaming_diloco.cpp, as TorchFT's
// DiLoCo class): one round every H / F steps; round k starts `delay` (tau)
// steps before its period ends, i.e. after step (k + 1) H/F - tau - 1, with
// fragment k mod F, and is applied tau steps later, at the period's end. This
// assumes every round commits (an aborted fragment is retried by the next
// round). There is no extra sync at the run's last step.
[[nodiscard]] inline bool quorumRoundSendsAfterStep(int step, int fragment, int inner_steps, int fragments,
                                                    int delay) {
    const int period = fragments > 0 && inner_steps >= fragments ? inner_steps / fragments : 1;
    const int t = step + 1 + delay;
    if (t < period || t % period != 0)
        return false;
    return (t / period - 1) % fragments == fragment;
}

} // namespace dt::diloco

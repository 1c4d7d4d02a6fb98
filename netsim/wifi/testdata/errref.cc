// errref.cc prints reference chunk success rates from the installed ns-3
// (Debian libns3-dev 3.37, built with GSL) for netsim/wifi/errormodel_test.go.
//
// Build and regenerate errref.txt (from this directory):
//
//   LIBS="ns3-core ns3-wifi ns3-network ns3-propagation ns3-mobility"
//   LIBS="$LIBS ns3-antenna ns3-spectrum ns3-energy"
//   g++ -O2 -std=c++17 errref.cc $(pkg-config --libs $LIBS) -o /tmp/errref
//   /tmp/errref > errref.txt
//
// Output: '#' comment lines, then one line per (model, mode, SNR):
//
//   <model> <mode> <snr dB> <snr linear> <csr nbits=8> <csr 64> <csr 1000> <csr 8512>
//
// model is "default" (the error rate model YansWifiPhyHelper installs when
// SetErrorRateModel is not called, printed in the header), "nist" or "yans".
// DSSS modes are handled by ErrorRateModel itself whatever the model, so
// they are printed for the default model only. When the four values are all
// exactly 1 (or all exactly 0) the line carries a single "1" (or "0")
// instead of four values, to keep the file small.

#include "ns3/core-module.h"
#include "ns3/dsss-phy.h"
#include "ns3/nist-error-rate-model.h"
#include "ns3/ofdm-phy.h"
#include "ns3/table-based-error-rate-model.h"
#include "ns3/wifi-tx-vector.h"
#include "ns3/yans-error-rate-model.h"
#include "ns3/yans-wifi-helper.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

// Exposes the error rate model type the helper would install.
struct HelperProbe : public YansWifiPhyHelper
{
    std::string DefaultErrorRateModel() const
    {
        return m_errorRateModel.at(0).GetTypeId().GetName();
    }
};

struct NamedModel
{
    const char* name;
    Ptr<ErrorRateModel> model;
    bool withDsss;
};

} // namespace

int
main()
{
    HelperProbe probe;
    std::string defName = probe.DefaultErrorRateModel();
    ObjectFactory factory;
    factory.SetTypeId(defName);
    Ptr<ErrorRateModel> def = factory.Create<ErrorRateModel>();

    std::printf("# ns-3 %s reference chunk success rates\n", "3.37");
    std::printf("# default error rate model of YansWifiPhyHelper: %s\n", defName.c_str());
    Ptr<TableBasedErrorRateModel> tb = DynamicCast<TableBasedErrorRateModel>(def);
    if (tb)
    {
        PointerValue pv;
        tb->GetAttribute("FallbackErrorRateModel", pv);
        UintegerValue thr;
        tb->GetAttribute("SizeThreshold", thr);
        std::printf("# TableBasedErrorRateModel FallbackErrorRateModel: %s SizeThreshold: %lu\n",
                    pv.Get<Object>()->GetInstanceTypeId().GetName().c_str(),
                    (unsigned long)thr.Get());
    }
    std::printf("# columns: model mode snr_db snr_linear csr(8) csr(64) csr(1000) csr(8512)\n");

    std::vector<NamedModel> models = {
        {"default", def, true},
        {"nist", CreateObject<NistErrorRateModel>(), false},
        {"yans", CreateObject<YansErrorRateModel>(), false},
    };
    std::vector<WifiMode> dsss = {
        DsssPhy::GetDsssRate1Mbps(),
        DsssPhy::GetDsssRate2Mbps(),
        DsssPhy::GetDsssRate5_5Mbps(),
        DsssPhy::GetDsssRate11Mbps(),
    };
    std::vector<WifiMode> ofdm = {
        OfdmPhy::GetOfdmRate6Mbps(),
        OfdmPhy::GetOfdmRate9Mbps(),
        OfdmPhy::GetOfdmRate12Mbps(),
        OfdmPhy::GetOfdmRate18Mbps(),
        OfdmPhy::GetOfdmRate24Mbps(),
        OfdmPhy::GetOfdmRate36Mbps(),
        OfdmPhy::GetOfdmRate48Mbps(),
        OfdmPhy::GetOfdmRate54Mbps(),
    };
    const uint64_t sizes[] = {8, 64, 1000, 8512};

    for (const auto& nm : models)
    {
        std::vector<std::pair<WifiMode, uint16_t>> modes;
        if (nm.withDsss)
        {
            for (const auto& m : dsss)
            {
                modes.emplace_back(m, 22);
            }
        }
        for (const auto& m : ofdm)
        {
            modes.emplace_back(m, 20);
        }
        for (const auto& [mode, width] : modes)
        {
            WifiTxVector txv;
            txv.SetMode(mode);
            txv.SetChannelWidth(width);
            txv.SetPreambleType(WIFI_PREAMBLE_LONG); // non-HT OFDM uses it too
            for (int q = -40; q <= 120; q++) // -10 dB .. 30 dB step 0.25 dB
            {
                double db = q * 0.25;
                double snr = std::pow(10.0, db / 10.0);
                double v[4];
                bool all1 = true;
                bool all0 = true;
                for (int i = 0; i < 4; i++)
                {
                    v[i] = nm.model->GetChunkSuccessRate(mode, txv, snr, sizes[i]);
                    all1 = all1 && v[i] == 1.0;
                    all0 = all0 && v[i] == 0.0;
                }
                if (all1 || all0)
                {
                    std::printf("%s %s %.2f %.17g %d\n",
                                nm.name,
                                mode.GetUniqueName().c_str(),
                                db,
                                snr,
                                all1 ? 1 : 0);
                    continue;
                }
                std::printf("%s %s %.2f %.17g %.17g %.17g %.17g %.17g\n",
                            nm.name,
                            mode.GetUniqueName().c_str(),
                            db,
                            snr,
                            v[0],
                            v[1],
                            v[2],
                            v[3]);
            }
        }
    }
    return 0;
}

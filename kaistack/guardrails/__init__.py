"""Pure policy rules over resources and manifests, shared by the policy pack, `kaistack lint` and admission."""

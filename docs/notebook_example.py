"""docs/python-api.md's example, as a notebook would use it (that page shows this file and what it prints)."""

from foil_studio import api

studio = api.open_store()  # $FOIL_DB, else ./foil.db, else the demo store `make run` built
print(studio.datasets()[["name", "format", "n_items"]].to_string(index=False))

# The figures of `foil metrics demo-sugarcrepe --run demo-clip`, as a data frame
table = studio.metrics_table("demo-sugarcrepe", "demo-clip")
print(table.round(2).head(4).to_string(index=False))

# Per item: correctness under the benchmark's tie rule and the score gap, beside the captions
results = studio.results("demo-sugarcrepe", "demo-clip")
captions = studio.items("demo-sugarcrepe").set_index("id")["captions"]
worst = results.nsmallest(2, "s(c) - s(c_n)")
worst = worst.assign(caption=worst["item"].map(captions.str[0]), negative=worst["item"].map(captions.str[1]))
print(worst[["item", "category", "correct", "s(c) - s(c_n)", "caption", "negative"]].round(3).to_string(index=False))

# An annotation batch: its labels and agreement (the figures of `foil agreement`)
batch = studio.batches()["name"].iloc[0]
agreement = studio.agreement(batch)
print(f"{batch}: {len(studio.labels(batch))} labels")
for name in ("percent_agreement", "cohen_mean", "krippendorff_alpha", "gwet_ac1"):
    if agreement[name] is None:  # an undefined coefficient is None, with its reason in "undefined"
        print(f"{name:<18} undefined: {agreement['undefined'][name]}")
        continue
    interval = agreement["intervals"][name]  # None when too few resamples define it
    low_high = "no interval (too few items)" if interval is None else f"{interval[0]:.3f} to {interval[1]:.3f}"
    print(f"{name:<18} {agreement[name]:7.3f}  95% interval {low_high}")

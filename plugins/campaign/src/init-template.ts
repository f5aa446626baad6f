import {ToolkitError} from '@toolkit/kit'
import {existsSync, writeFileSync} from 'node:fs'

/** The file `toolkit campaign init` writes: every key, commented. */
export const BUSINESS_TEMPLATE = `# business.toml: the input of \`toolkit campaign generate\`.
# Every key is documented in docs/campaign.md. Unknown keys are an error, so typos never pass.

[business]
name = "Acme Coffee"                       # 1-80 characters
url = "https://acme-coffee.example"        # final URLs must stay on this site
language = "en"                            # BCP 47 tag of the ads' language
locations = ["United States"]              # 1-10 targeted locations, as Google Ads names them
goal = "Sell coffee beans and brewing gear online"
description = "Acme Coffee roasts speciality beans every week and ships them fresh with the gear to brew them."
# brand_terms = ["acme coffee"]            # default: the business name, lowercase
# competitors = ["other roaster"]          # become negative keywords
# avoid = ["instant coffee"]               # become negative keywords

# Pages the planner may use as final URLs (matched to catalog categories by name).
[[business.pages]]
name = "Coffee Beans"
url = "https://acme-coffee.example/beans"

[budget]
daily = 50.00                              # in the account's currency; stored as integer cents
currency = "USD"                           # ISO 4217
max_cpc = 1.20                             # optional ceiling for every CPC bid

[export]
status = "paused"                          # "paused" (default) or "enabled" on import
url_suffix = "utm_source=google&utm_medium=cpc&utm_campaign={campaign}"
eu_political_ads = false

[catalog]
file = "catalog.csv"                       # CSV or JSON: id, title, url, price, category, image, description

[brand]
# logo = "logo.png"                        # square logo; needed by Performance Max and Demand Gen
colors = ["#3b2417", "#d9a441"]            # 1-5 colours, #rrggbb

[campaigns]
formats = ["search"]                       # any of "search", "performance_max", "demand_gen"
search_bid_strategy = "manual_cpc"         # or "maximize_clicks", "maximize_conversions", "maximize_conversion_value"
`

export function writeBusinessTemplate(file: string, force: boolean): {file: string} {
  if (existsSync(file) && !force) {
    throw new ToolkitError(`${file} already exists; pass --force to overwrite it`, {code: 'exists', exit: 2})
  }
  writeFileSync(file, BUSINESS_TEMPLATE)
  return {file}
}

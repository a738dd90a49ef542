"""What every SVG the project draws shares: the namespace and the font stack (CJK first)."""

SVG_NS = "http://www.w3.org/2000/svg"
FONT = ("'Noto Sans CJK SC','Source Han Sans SC','PingFang SC','Microsoft YaHei',"
        "'WenQuanYi Micro Hei','Noto Sans',Arial,sans-serif")
